#!/usr/bin/env bash
# Instructions per operation of memory.get.hit, memory.mapped.get.hit and their locked
# dictionary (and of any other figure `strata-bench instructions` knows, named after the counts),
# counted by callgrind: the same on every run, whatever else the machine does.
#
#   scripts/instructions.sh [LOW HIGH [FIGURE...]]
#
# Each figure runs at LOW and at HIGH reads (default 100000 and 300000) on one thread
# (`strata-bench instructions`); the instructions per read are the difference in instructions
# over the difference in reads, so building the data set cancels out. Needs valgrind (Debian's
# `valgrind` package).
set -euo pipefail
cd "$(dirname "$0")/.."
low=${1:-100000}
high=${2:-300000}
extra=("${@:3}")
command -v valgrind > /dev/null || { echo "instructions.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }

swift build -c release --product strata-bench > /dev/null
bin=$(swift build -c release --show-bin-path)
# Valgrind 3.19 cannot read Swift 6.3's DWARF 5 debug information: count a copy without it, in
# the same folder so that it finds the same libraries.
objcopy --strip-debug "$bin/strata-bench" "$bin/strata-bench-stripped"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

instructions() {
    valgrind --tool=callgrind --callgrind-out-file="$work/out" "$bin/strata-bench-stripped" instructions "$1" "$2" \
        > /dev/null 2> "$work/log" || { cat "$work/log" >&2; exit 1; }
    awk '/^summary:/ { print $2 }' "$work/out"
}

printf '%-24s %12s\n' figure "instr/op"
declare -A per
for figure in mutex-dictionary memory.get.hit memory.mapped.get.hit "${extra[@]}"; do
    a=$(instructions "$figure" "$low")
    b=$(instructions "$figure" "$high")
    per[$figure]=$(awk -v a="$a" -v b="$b" -v l="$low" -v h="$high" 'BEGIN { printf "%.1f", (b - a) / (h - l) }')
    printf '%-24s %12s\n' "$figure" "${per[$figure]}"
done
awk -v d="${per[mutex-dictionary]}" -v m="${per[memory.get.hit]}" -v c="${per[memory.mapped.get.hit]}" 'BEGIN {
    printf "memory.get.hit / mutex-dictionary: %.2f\n", m / d
    printf "memory.mapped.get.hit - memory.get.hit: %+.1f instructions per read\n", c - m
}'
