#!/usr/bin/env bash
# Checks the CRC-32C fast paths (Sources/CStrata/CRC32C.c) for the processors Strata runs on, from
# this x86-64 Linux machine:
#
#   scripts/crc32c-cross.sh
#
# - x86-64 Linux: scripts/crc32c-test.c built with gcc and clang and run here (expects the
#   hardware path where /proc/cpuinfo lists SSE 4.2), and under `qemu-x86_64 -cpu qemu64`, a
#   processor without SSE 4.2 (expects the portable path).
# - aarch64 Linux: the test built with `-march=armv8-a+crc` (the compiler may assume the CRC
#   instructions) and with plain `-march=armv8-a` (it may not; the library asks getauxval), by gcc
#   and by clang, run under qemu-aarch64 with a processor that has the instructions (expects the
#   hardware path) and with one that lacks them, or, as none of qemu's models lacks them, with
#   getauxval's HWCAP_CRC32 bit hidden (expects the portable path).
# - Apple: the library alone compiled by the toolchain's clang for every Apple target of the
#   package (`-ffreestanding`, stand-ins for the few libc headers it includes), whose code must
#   hold the CRC-32C instructions (crc32cx/crc32cb on arm64, crc32q on x86-64), and which must ask
#   the system (sysctlbyname) exactly where clang's baseline for the target does not promise them
#   (tvOS) and for AVX-512 on x86-64 macOS. Nothing here can run that code.
#
# Installs Debian's gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and qemu-user where missing.
# Prints one line a check and a summary; exits 1 if any check failed.
set -euo pipefail
cd "$(dirname "$0")/.."
library=Sources/CStrata/CRC32C.c
include=Sources/CStrata/include
test_program=scripts/crc32c-test.c
flags=(-O2 -std=c11 -Wall -Wextra -Werror -pthread)

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
missing=()
for package in gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user; do
    dpkg -s "$package" > /dev/null 2>&1 || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "crc32c-cross.sh: installing ${missing[*]}" >&2
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" > /dev/null \
        || { as_root apt-get update > /dev/null \
            && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" > /dev/null; }
fi

# The toolchain's llvm-objdump and llvm-nm (beside its clang) read every Mach-O flavour, arm64_32 too.
toolchain=$(dirname "$(command -v clang)")
objdump=$toolchain/llvm-objdump
nm=$toolchain/llvm-nm
[ -x "$objdump" ] || objdump=$(command -v llvm-objdump)
[ -x "$nm" ] || nm=$(command -v llvm-nm)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
summary=()
failures=0
record() {  # record pass|FAIL text
    summary+=("$(printf '%-4s %s' "$1" "$2")")
    [ "$1" = pass ] || failures=$((failures + 1))
    printf '%-4s %s\n' "$1" "$2"
}

# run NAME EXPECTATION COMMAND...: runs the test, records its own line of output.
run() {
    local name=$1 expect=$2
    shift 2
    local output status=0
    output=$("$@" "--expect=$expect" 2>&1) || status=$?
    if [ "$status" -eq 0 ]; then
        record pass "$name: $(tail -n 1 <<< "$output")"
    else
        record FAIL "$name (expected $expect): exit status $status: $(tr '\n' ' ' <<< "$output")"
    fi
}

# MARK: x86-64 Linux

# build NAME COMMAND...: a failed build is recorded, and the runs of what it should have made fail.
build() {
    local name=$1
    shift
    "$@" 2> "$work/log" || record FAIL "$name: does not build: $(head -n 3 "$work/log" | tr '\n' ' ')"
}

build "x86_64 gcc" gcc "${flags[@]}" -I"$include" "$library" "$test_program" -o "$work/x86_64-gcc"
build "x86_64 clang" clang "${flags[@]}" -I"$include" "$library" "$test_program" -o "$work/x86_64-clang"
native=portable
grep -q -w sse4_2 /proc/cpuinfo && native=hardware
run "x86_64 gcc, this machine" "$native" "$work/x86_64-gcc"
run "x86_64 clang, this machine" "$native" "$work/x86_64-clang"
run "x86_64 gcc, qemu -cpu qemu64 (no SSE 4.2)" portable qemu-x86_64 -cpu qemu64 "$work/x86_64-gcc"

# MARK: aarch64 Linux

build "aarch64 gcc -march=armv8-a+crc" aarch64-linux-gnu-gcc "${flags[@]}" -march=armv8-a+crc -I"$include" \
    "$library" "$test_program" -o "$work/crc-gcc"
build "aarch64 gcc -march=armv8-a" aarch64-linux-gnu-gcc "${flags[@]}" -march=armv8-a -I"$include" "$library" \
    "$test_program" -o "$work/plain-gcc"
build "aarch64 clang -march=armv8-a" clang --target=aarch64-linux-gnu "${flags[@]}" -march=armv8-a -I"$include" \
    "$library" "$test_program" -o "$work/plain-clang"
aarch64() { qemu-aarch64 -L /usr/aarch64-linux-gnu "$@"; }
run "aarch64 gcc -march=armv8-a+crc, qemu -cpu max" hardware aarch64 -cpu max "$work/crc-gcc"
run "aarch64 gcc -march=armv8-a, qemu -cpu max" hardware aarch64 -cpu max "$work/plain-gcc"
run "aarch64 clang -march=armv8-a, qemu -cpu max" hardware aarch64 -cpu max "$work/plain-clang"

# A processor without the CRC instructions: the first of qemu's models whose HWCAP lacks them, as
# a probe apart from the library says.
cat > "$work/hwcap.c" << 'EOF'
#include <stdio.h>
#include <sys/auxv.h>
int main(void) { return puts((getauxval(AT_HWCAP) & HWCAP_CRC32) ? "crc" : "none") < 0; }
EOF
build "HWCAP probe" aarch64-linux-gnu-gcc -O2 "$work/hwcap.c" -o "$work/hwcap"
without_crc=
models=$( (qemu-aarch64 -cpu help || true) | awk '/^  / { print $1 }')  # exits 1 after listing
for model in $models; do
    if [ "$(aarch64 -cpu "$model" "$work/hwcap" 2> /dev/null)" = none ]; then
        without_crc=$model
        break
    fi
done
if [ -n "$without_crc" ]; then
    run "aarch64 gcc -march=armv8-a, qemu -cpu $without_crc (no CRC)" portable aarch64 -cpu "$without_crc" \
        "$work/plain-gcc"
    run "aarch64 clang -march=armv8-a, qemu -cpu $without_crc (no CRC)" portable aarch64 -cpu "$without_crc" \
        "$work/plain-clang"
else
    echo "note: every qemu-aarch64 model has the CRC instructions ($(tr '\n' ' ' <<< "$models")); hiding HWCAP_CRC32 instead"
    # getauxval with the bit cleared, preloaded into the guest (-E), so the library sees a
    # processor without the instructions; the +crc build must still take them (its baseline
    # promises them), the plain ones must not.
    cat > "$work/hide-crc.c" << 'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/auxv.h>
unsigned long getauxval(unsigned long type) {
    unsigned long (*real)(unsigned long) = (unsigned long (*)(unsigned long))dlsym(RTLD_NEXT, "getauxval");
    unsigned long value = real(type);
    return type == AT_HWCAP ? value & ~(unsigned long)HWCAP_CRC32 : value;
}
EOF
    build "getauxval without HWCAP_CRC32" aarch64-linux-gnu-gcc -O2 -shared -fPIC "$work/hide-crc.c" \
        -o "$work/hide-crc.so" -ldl
    hidden=(-cpu max -E "LD_PRELOAD=$work/hide-crc.so")
    run "aarch64 gcc -march=armv8-a, qemu -cpu max, HWCAP_CRC32 hidden" portable aarch64 "${hidden[@]}" \
        "$work/plain-gcc"
    run "aarch64 clang -march=armv8-a, qemu -cpu max, HWCAP_CRC32 hidden" portable aarch64 "${hidden[@]}" \
        "$work/plain-clang"
    run "aarch64 gcc -march=armv8-a+crc, qemu -cpu max, HWCAP_CRC32 hidden" hardware aarch64 "${hidden[@]}" \
        "$work/crc-gcc"
fi

# MARK: Apple, compiled only

stand_ins=$work/stand-ins
mkdir -p "$stand_ins/sys"
# The declarations CRC32C.c uses, as Apple's SDK declares them (the types' layout is irrelevant to
# a compile check).
cat > "$stand_ins/pthread.h" << 'EOF'
typedef struct { long __sig; char __opaque[8]; } pthread_once_t;
#define PTHREAD_ONCE_INIT {0x30B1BCBA, {0}}
int pthread_once(pthread_once_t *, void (*)(void));
EOF
cat > "$stand_ins/string.h" << 'EOF'
#include <stddef.h>
void *memcpy(void *, const void *, size_t);
EOF
cat > "$stand_ins/sys/sysctl.h" << 'EOF'
#include <stddef.h>
int sysctlbyname(const char *, void *, size_t *, void *, size_t);
EOF
for target in arm64-apple-ios18.0 arm64-apple-macos15.0 arm64-apple-tvos18.0 arm64-apple-xros2.0 \
    arm64_32-apple-watchos11.0 arm64-apple-watchos11.0 x86_64-apple-macos15.0; do
    object=$work/$target.o
    if ! clang --target="$target" -ffreestanding "${flags[@]}" -isystem "$stand_ins" -I"$include" -c "$library" \
        -o "$object" 2> "$work/log"; then
        record FAIL "$target: does not compile: $(head -n 3 "$work/log" | tr '\n' ' ')"
        continue
    fi
    case $target in
        x86_64-*) wanted='crc32q' ;;
        *) wanted='crc32cx|crc32cb' ;;
    esac
    # Mnemonics only (a tab before, white space after), not symbol names such as _strata_crc32c.
    found=$("$objdump" -d --no-show-raw-insn "$object" | grep -o -E $'\t''(crc32c[bhwx]|crc32[bwlq]|vpclmulqdq)\s' \
        | tr -d '\t ' | sort | uniq -c | awk '{ printf "%s%s x%s", separator, $2, $1; separator = ", " }' || true)
    asks=no
    "$nm" -u "$object" | grep -q -w _sysctlbyname && asks=yes
    case $target in
        arm64-apple-tvos*|x86_64-apple-macos*) should_ask=yes ;;
        *) should_ask=no ;;
    esac
    missing_instructions=
    for instruction in ${wanted//|/ }; do
        grep -q -w "$instruction" <<< "$found" || missing_instructions+=" $instruction"
    done
    if [ -z "$missing_instructions" ] && [ "$asks" = "$should_ask" ]; then
        record pass "$target: $found; asks sysctlbyname: $asks"
    else
        record FAIL "$target: ${found:-no CRC instructions}; missing:${missing_instructions:- none}; asks sysctlbyname: $asks (expected $should_ask)"
    fi
done

echo
echo "Summary: $(( ${#summary[@]} - failures )) of ${#summary[@]} checks passed"
printf '  %s\n' "${summary[@]}"
[ "$failures" -eq 0 ] || { echo "crc32c-cross.sh: $failures checks failed" >&2; exit 1; }
