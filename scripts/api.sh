#!/usr/bin/env bash
# Checks the public API of every documented module against its recorded baseline in api/, so a
# change to it is deliberate: run after a build (it reads the modules in .build/debug), and after
# changing the API on purpose, record the new one with --update and commit api/ with the change.
# Each line of api/MODULE.txt is one public symbol: its path, its declaration and, in a
# constrained extension, the constraints. Default implementations a protocol hands to its
# conforming types are left out (they belong to the protocol's line).
# Usage: scripts/api.sh [--update] [--build-path PATH]
set -euo pipefail
cd "$(dirname "$0")/.."

update=0
build=.build/debug
while [ $# -gt 0 ]; do
    case "$1" in
    --update) update=1 ;;
    --build-path) build=$2; shift ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
    shift
done

modules=(Strata StrataTesting StrataHTTP StrataAsyncHTTPClient StrataObjects StrataSQLite StrataPostgres
    StrataSQLiteObjects StrataPostgresObjects StrataServiceLifecycle StrataTracing StrataHummingbird StrataVapor)
target=$(uname -m)-unknown-linux-gnu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
module_maps=()
for map in "$build"/*.build/module.modulemap; do
    module_maps+=(-Xcc "-fmodule-map-file=$map")
done
# C modules whose module map sits in their sources (ours and the dependencies').
while IFS= read -r folder; do
    module_maps+=(-I "$folder")
done < <(find Sources .build/checkouts -name module.modulemap -path '*/Sources/*' -exec dirname {} \; | sort -u)

mkdir -p api
status=0
for module in "${modules[@]}"; do
    if [ ! -e "$build/Modules/$module.swiftmodule" ]; then
        echo "$module is not built in $build: build with every trait first (swift build with STRATA_POSTGRES_URL set)." >&2
        exit 1
    fi
    mkdir -p "$work/$module"
    swift-symbolgraph-extract -module-name "$module" -target "$target" -I "$build/Modules" "${module_maps[@]}" \
        -minimum-access-level public -skip-inherited-docs -output-dir "$work/$module" >/dev/null
    python3 - "$work/$module" >"$work/$module.txt" <<'PY'
import json, pathlib, sys

lines = set()
for graph in sorted(pathlib.Path(sys.argv[1]).glob("*.symbols.json")):
    extended = graph.name.split("@")[1].split(".")[0] + "." if "@" in graph.name else ""
    for symbol in json.loads(graph.read_text())["symbols"]:
        if "::SYNTHESIZED::" in symbol["identifier"]["precise"]:
            continue
        path = extended + ".".join(symbol["pathComponents"])
        declaration = "".join(fragment["spelling"] for fragment in symbol.get("declarationFragments", []))
        line = f"{path} | {' '.join(declaration.split())}"
        constraints = symbol.get("swiftExtension", {}).get("constraints", [])
        if constraints:
            line += " | where " + ", ".join(
                f"{c['lhs']} {':' if c['kind'] == 'conformance' else '=='} {c['rhs']}" for c in constraints
            )
        lines.add(line)
print("\n".join(sorted(lines)))
PY
    if [ "$update" = 1 ]; then
        cp "$work/$module.txt" "api/$module.txt"
    elif ! diff -u "api/$module.txt" "$work/$module.txt" >"$work/$module.diff"; then
        echo "The public API of $module differs from api/$module.txt:" >&2
        cat "$work/$module.diff" >&2
        status=1
    fi
done
if [ "$update" = 1 ]; then
    echo "Recorded the public API of ${#modules[@]} modules in api/."
elif [ "$status" -ne 0 ]; then
    echo "If the change is deliberate, record it: scripts/api.sh --update, and commit api/." >&2
fi
exit "$status"
