#!/usr/bin/env bash
# Drives the example server (Examples/ProductServer) with wrk, as the article "Getting started on a server" (Strata.docc) describes
# reports:
#   1. one server with no cache: every request waits for the 50 ms upstream;
#   2. one server with the cache (memory over PostgreSQL, one upstream call per product),
#      measured after a warm-up;
#   3. four cached servers on one PostgreSQL under the same total load, while a writer changes
#      products: how long each server goes on answering with the old product after the commit;
#   4. the same four servers, one of which (8084) reaches PostgreSQL through a TCP relay
#      (scripts/tcp-relay.py) that the writer freezes mid-run for FREEZE_MS (6000) without closing
#      anything: each server's staleness for the changes committed before, during and after the
#      fault. Its SharedCache's heartbeat (2 s, answered within 1 s) must bound the staleness in
#      the fault to about 3 s, and invalidation must resume after it.
# Each run is CONNECTIONS connections for DURATION (64 and 30s unless set) over IDS products (1000).
# Everything a run measured (wrk's reports, the servers' /stats, the writer's reports) is kept in
# RESULTS (.build/load/DATE-TIME unless set); scripts/load-tables.py .build/load/* rewrites the
# article's tables from every run kept there.
# Starts a throwaway PostgreSQL with scripts/postgres.sh (or uses STRATA_POSTGRES_URL), installs
# Debian's wrk when it is missing, builds the server in release mode, and stops everything it
# started on exit.
# Usage: scripts/load.sh
set -euo pipefail
cd "$(dirname "$0")/.."

connections=${CONNECTIONS:-64}
duration=${DURATION:-30s}
ids=${IDS:-1000}
freeze_ms=${FREEZE_MS:-6000}
results=${RESULTS:-.build/load/$(date -u +%Y%m%d-%H%M%S)}
work=$(mktemp -d)
postgres_dir=""
servers=()

cleanup() {
    for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ -n "$postgres_dir" ]; then scripts/postgres.sh stop "$postgres_dir" || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

say() { printf '\n==> %s\n' "$*" >&2; }

if ! command -v wrk >/dev/null 2>&1; then
    say "Installing wrk (Debian's package)"
    sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq >/dev/null && $sudo apt-get install -y -qq wrk >/dev/null
fi

if [ -z "${STRATA_POSTGRES_URL:-}" ]; then
    say "Starting a throwaway PostgreSQL server"
    eval "$(scripts/postgres.sh start)"
    postgres_dir=$STRATA_POSTGRES_DIR
fi

say "Building the example server (release)"
swift build -c release --traits Server --product ProductServer >&2
server=$(swift build -c release --traits Server --show-bin-path)/ProductServer

# Requests spread uniformly over $ids products.
cat >"$work/products.lua" <<EOF
local counter = 0
function setup(thread)
    counter = counter + 1
    thread:set("seed", counter)
end
function init(args)
    math.randomseed(seed * 7919)
end
function request()
    return wrk.format("GET", "/products/" .. math.random(1, $ids))
end
EOF

start_server() { # port mode table [event loop threads]
    "$server" serve --port "$1" --mode "$2" --postgres "$STRATA_POSTGRES_URL" --table "$3" \
        --threads "${4:-$(nproc)}" >"$work/server-$1.log" 2>&1 &
    servers+=("$!")
    for _ in $(seq 1 200); do
        if curl -sf "http://127.0.0.1:$1/stats" >/dev/null 2>&1; then return 0; fi
        sleep 0.1
    done
    echo "the server on port $1 did not start:" >&2
    cat "$work/server-$1.log" >&2
    exit 1
}

stop_servers() {
    for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${servers[@]}"; do wait "$pid" 2>/dev/null || true; done
    servers=()
}

# Prints "requests/s p50 p99" from a wrk report.
summary() {
    awk '/Requests\/sec:/ { rps = $2 }
         /^ +50%/ { p50 = $2 }
         /^ +99%/ { p99 = $2 }
         END { printf "%s %s %s", rps, p50, p99 }' "$1"
}

run_wrk() { # port connections output [threads]
    wrk -t"${4:-2}" -c"$2" -d"$duration" --latency -s "$work/products.lua" "http://127.0.0.1:$1" >"$3"
}

table="load_$(date +%s)"

say "1. One server, no cache ($connections connections, $duration)"
start_server 8080 uncached "$table"
run_wrk 8080 "$connections" "$work/uncached.txt"
uncached_stats=$(curl -s http://127.0.0.1:8080/stats)
echo "$uncached_stats" >"$work/uncached-stats.json"
stop_servers
read -r uncached_rps uncached_p50 uncached_p99 <<<"$(summary "$work/uncached.txt")"

say "2. One server with the cache: a 10 s warm-up, then $duration"
start_server 8080 cached "$table"
DURATION_SAVED=$duration; duration=10s
run_wrk 8080 "$connections" "$work/warmup.txt"
duration=$DURATION_SAVED
run_wrk 8080 "$connections" "$work/cached.txt"
cached_stats=$(curl -s http://127.0.0.1:8080/stats)
echo "$cached_stats" >"$work/cached-stats.json"
stop_servers
read -r cached_rps cached_p50 cached_p99 <<<"$(summary "$work/cached.txt")"

say "3. Four cached servers on one PostgreSQL, $connections connections in all, a writer changing products"
# Four servers on these cores: one event loop each, one wrk thread each.
for port in 8081 8082 8083 8084; do start_server "$port" cached "$table" 1; done
per_server=$((connections / 4))
loads=()
for port in 8081 8082 8083 8084; do
    run_wrk "$port" "$per_server" "$work/four-$port.txt" 1 &
    loads+=("$!")
done
"$server" writer --postgres "$STRATA_POSTGRES_URL" --table "$table" --servers 8081,8082,8083,8084 \
    --ids "$ids" --changes 200 --interval-ms 100 >"$work/writer.txt"
for pid in "${loads[@]}"; do wait "$pid"; done
four_rps=0
four_p99=""
for port in 8081 8082 8083 8084; do
    read -r rps _ p99 <<<"$(summary "$work/four-$port.txt")"
    four_rps=$(awk -v a="$four_rps" -v b="$rps" 'BEGIN { printf "%.0f", a + b }')
    four_p99="$four_p99 $p99"
done
four_stats=$(for port in 8081 8082 8083 8084; do curl -s "http://127.0.0.1:$port/stats"; echo; done)
echo "$four_stats" >"$work/four-stats.jsonl"
stop_servers

say "4. Four cached servers, one of them behind a relay frozen mid-run for $freeze_ms ms"
postgres_port=$(sed -E 's#.*@[^/]*:([0-9]+)/.*#\1#' <<<"$STRATA_POSTGRES_URL")
python3 scripts/tcp-relay.py 0 "$postgres_port" >"$work/relay.txt" &
relay=$!
servers+=("$relay")
for _ in $(seq 1 50); do [ -s "$work/relay.txt" ] && break; sleep 0.1; done
relay_port=$(awk '{ print $2 }' "$work/relay.txt")
relayed_url=$(sed -E "s#(@[^/]*):[0-9]+/#\1:$relay_port/#" <<<"$STRATA_POSTGRES_URL")
for port in 8081 8082 8083; do start_server "$port" cached "$table" 1; done
STRATA_POSTGRES_URL=$relayed_url start_server 8084 cached "$table" 1
loads=()
for port in 8081 8082 8083 8084; do
    run_wrk "$port" "$per_server" "$work/fault-$port.txt" 1 &
    loads+=("$!")
done
"$server" writer --postgres "$STRATA_POSTGRES_URL" --table "$table" --servers 8081,8082,8083,8084 \
    --ids "$ids" --changes 200 --interval-ms 100 --freeze-pid "$relay" --freeze-after-ms 5000 \
    --freeze-ms "$freeze_ms" --watch-ms 12000 >"$work/fault-writer.txt"
for pid in "${loads[@]}"; do wait "$pid"; done
fault_rps=""
for port in 8081 8082 8083 8084; do
    read -r rps _ p99 <<<"$(summary "$work/fault-$port.txt")"
    fault_rps="$fault_rps $port: $rps/s p99 $p99;"
done
stop_servers

mkdir -p "$results"
cp "$work"/*.txt "$work"/*.json "$work"/*.jsonl "$results"/
printf '{"date": "%s", "cores": %s, "connections": %s, "duration": "%s", "ids": %s, "freezeMilliseconds": %s}\n' \
    "$(date -u +%Y-%m-%d)" "$(nproc)" "$connections" "$duration" "$ids" "$freeze_ms" >"$results/run.json"

ratio=$(awk -v a="$cached_rps" -v b="$uncached_rps" 'BEGIN { printf "%.1f", a / b }')
cat <<EOF

Load on $(nproc) cores: wrk, $connections connections, $duration per run, $ids products, upstream 50 ms per call.

| run                              | requests/s | p50      | p99      |
|----------------------------------|------------|----------|----------|
| one server, no cache             | $uncached_rps | $uncached_p50 | $uncached_p99 |
| one server, cache (warm)         | $cached_rps | $cached_p50 | $cached_p99 |
| four servers, cache, one writer  | $four_rps | -        | $four_p99 |

cached / uncached requests per second: ${ratio}x
no cache:   $uncached_stats
cache:      $cached_stats   (upstream calls should equal distinct IDs)
four servers (upstream calls are shared through PostgreSQL):
$four_stats
writer: $(cat "$work/writer.txt")

four servers, 8084 behind a relay frozen for $freeze_ms ms:$fault_rps
$(cat "$work/fault-writer.txt")

kept in $results (scripts/load-tables.py $results rewrites the article's tables from it)
EOF
for log in "$work"/server-*.log; do
    if [ -s "$log" ]; then
        echo "$(basename "$log"):"
        cat "$log"
    fi
done
