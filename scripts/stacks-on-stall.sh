#!/usr/bin/env bash
# Watches a running `swift test` and, the first time its output shows a local connection that
# never came up (a connect timeout, PostgreSQL that did not answer) or it prints nothing for three
# minutes, writes every thread's stack of the test process to OUT with gdb. A failure of that kind
# in CI can then be read afterwards instead of guessed at; scripts/test.sh prints OUT at the end.
# Usage: scripts/stacks-on-stall.sh TEST_LOG OUT   (runs until killed)
set -uo pipefail
log=$1 out=$2
command -v gdb >/dev/null || { echo "gdb is not installed: no stacks on a stall" >"$out"; exit 0; }

quiet=0 size=-1
while sleep 5; do
    [ -f "$log" ] || continue
    now=$(stat -c %s "$log")
    if [ "$now" = "$size" ]; then quiet=$((quiet + 5)); else quiet=0 size=$now; fi
    reason=""
    if grep -qE 'connectTimeout|did not answer within|no connection to PostgreSQL' "$log"; then
        reason="a local connection did not come up"
    elif [ "$quiet" -ge 180 ]; then
        reason="no output for $quiet s"
    fi
    [ -n "$reason" ] || continue
    # The oldest test process is the runner; exit tests are its younger children.
    pid=$(pgrep -o -f 'PackageTests.xctest' || true)
    [ -n "$pid" ] || continue
    {
        echo "Stacks of the test process $pid ($reason), at $(date -u +%T):"
        timeout 120 gdb -p "$pid" -batch -ex 'info threads' -ex 'thread apply all bt 40' 2>&1
    } >"$out"
    exit 0
done
