#!/usr/bin/env bash
# Measures Caffeine 2.6.2 and theine 2.0.0 on the synthetic traces of `strata-bench hitrate`, at
# its synthetic sizes, into docs/hitrate-reference; then scripts/peer-reference.py turns them into
# Sources/strata-bench/PeerReference.swift. Needs Debian's libcaffeine-java and a JDK, and
# `pip install theine==2.0.0 cachetools==8.0.1`. About 40 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
tools=../shared/traces/tools
out=docs/hitrate-reference
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
swift build -c release --product strata-bench
bench=.build/release/strata-bench
javac -cp /usr/share/java/caffeine.jar -d "$work" "$tools/HitRate.java"
sizes=10,30,100,1000,10000
mkdir -p "$out"
for trace in zipf0.6 zipf0.8 zipf1.0 zipf0.8+scans shift0.8 rereference recency1.0 recency0.8; do
    "$bench" hitrate --print-keys "$trace" > "$work/$trace.keys"
    java -cp "/usr/share/java/caffeine.jar:$work" HitRate "$work/$trace.keys" "$sizes" 10 put > "$out/$trace.caffeine"
    THEINE_RUNS=3 python3 "$tools/peers.py" "$work/$trace.keys" "$sizes" theine > "$out/$trace.theine"
done
for size in ${sizes//,/ }; do
    "$bench" hitrate --print-keys loop1.1x --size "$size" > "$work/loop1.1x-$size.keys"
    java -cp "/usr/share/java/caffeine.jar:$work" HitRate "$work/loop1.1x-$size.keys" "$size" 10 put > "$out/loop1.1x-$size.caffeine"
    THEINE_RUNS=3 python3 "$tools/peers.py" "$work/loop1.1x-$size.keys" "$size" theine > "$out/loop1.1x-$size.theine"
done
