#!/usr/bin/env bash
# Runs every check Strata's CI runs, on a fresh machine or a developer's:
#   0. checks what an app pays: a package that depends on Strata with the default traits resolves
#      at most 5 packages and no server stack (scripts/check-consumer.sh), and the CRC-32C code
#      takes the instructions of every CPU it targets (scripts/crc32c-cross.sh: aarch64 Linux under
#      qemu, each Apple arm64 target through the toolchain's clang);
#   1. builds everything (library, tools, tests) with every trait (`--enable-all-traits`: the
#      server pieces, PostgreSQL, AsyncHTTPClient, Hummingbird, Vapor, lifecycle and tracing) and
#      fails on any compiler warning in our code; then builds the library, tools and examples
#      again with the default traits only, what `swift run strata demo` and an app build, and
#      runs the demo; between the two, checks the public API of every documented module against
#      api/ (scripts/api.sh) and that each public type is in its catalog's topics
#      (scripts/catalog-topics.sh);
#   2. runs the whole test suite, every suite of every trait in one `swift test --skip-build` of
#      what step 1 built (with STRATA_POSTGRES_URL set, the default traits are every trait: see
#      Package.swift);
#   3. runs the concurrency stress tests (and the lifecycle and tracing suites) again under
#      ThreadSanitizer, failing on any report;
#   4. builds the documentation of every documented module, failing on any DocC warning;
#   5. checks formatting with swift format.
# The PostgreSQL tests use the server STRATA_POSTGRES_URL names; when it is unset, this script
# starts a throwaway one with scripts/postgres.sh (installing PostgreSQL if needed) and stops it
# on exit. If that server cannot start, the run fails here, saying why.
# Usage: scripts/test.sh [--skip-tsan]
set -euo pipefail
cd "$(dirname "$0")/.."

skip_tsan=0
for argument in "$@"; do
    case "$argument" in
    --skip-tsan) skip_tsan=1 ;;
    *) echo "unknown option: $argument" >&2; exit 2 ;;
    esac
done

log_dir=$(mktemp -d)
postgres_dir=""
cleanup() {
    if [ -n "$postgres_dir" ]; then
        scripts/postgres.sh stop "$postgres_dir" || true
    fi
    rm -rf "$log_dir"
}
trap cleanup EXIT

started=$SECONDS
step() { printf '\n==> %s (at %d s)\n' "$*" "$((SECONDS - started))"; }

step "Checking what an app resolves (the default traits)"
# Without STRATA_POSTGRES_URL, whose presence turns the server traits on by default (Package.swift).
env -u STRATA_POSTGRES_URL scripts/check-consumer.sh

step "Checking the CRC-32C fast paths on ARM Linux (qemu) and Apple targets"
scripts/crc32c-cross.sh

if [ -z "${STRATA_POSTGRES_URL:-}" ]; then
    step "Starting a throwaway PostgreSQL server"
    if ! postgres_env=$(scripts/postgres.sh start); then
        echo "Could not start PostgreSQL for the tests (see above); set STRATA_POSTGRES_URL to use a running server." >&2
        exit 1
    fi
    eval "$postgres_env"
    postgres_dir=$STRATA_POSTGRES_DIR
fi
export STRATA_POSTGRES_URL

step "Building with every trait (warnings in Sources/ or Tests/ fail the run)"
# A bare build: with STRATA_POSTGRES_URL set, the default traits are every server trait
# (Package.swift), as in a contributor's bare `swift test`.
swift build --build-tests 2>&1 | tee "$log_dir/build.log"
if grep -E '^/.*/(Sources|Tests|Examples)/.*: warning:' "$log_dir/build.log" | grep -v '/.build' | sort -u >"$log_dir/warnings.txt" \
    && [ -s "$log_dir/warnings.txt" ]; then
    echo "Compiler warnings in the project's code:" >&2
    cat "$log_dir/warnings.txt" >&2
    exit 1
fi

step "Checking the public API against its baseline in api/"
# A change to the public API is deliberate: it comes with scripts/api.sh --update and the new api/.
scripts/api.sh
# And every public type of a module with a catalog is in that catalog's topics.
scripts/catalog-topics.sh

step "Building with the default traits, as an app does, and running the demo"
# Its own folder, so neither build undoes the other's trait flags. The library, the tools and the
# examples, not the tests: the suites run with every trait (above), and compiling them again
# without the server traits cost more than six minutes of the run.
env -u STRATA_POSTGRES_URL swift build --scratch-path .build-default 2>&1 | tee "$log_dir/build-default.log"
if grep -E '^/.*/(Sources|Tests|Examples)/.*: warning:' "$log_dir/build-default.log" | grep -v '/.build' | sort -u >"$log_dir/warnings.txt" \
    && [ -s "$log_dir/warnings.txt" ]; then
    echo "Compiler warnings in the project's code (default traits):" >&2
    cat "$log_dir/warnings.txt" >&2
    exit 1
fi
env -u STRATA_POSTGRES_URL swift run --skip-build --scratch-path .build-default strata demo --requests 20 --burst 20

step "Running every test suite in one run (a bare swift test)"
# Every suite at once, as a contributor's `swift test` runs them: no test holds a cooperative-pool
# thread in a blocking call (synchronous file, database and CPU-heavy suites run on the tests' own
# threads through the .onTestThreads trait; child processes are awaited there too), and deadlines
# fire from a Dispatch timer, so the time-limit tests hold while the stress suites run beside them.
# A run takes about a minute here; a hung one is stopped (with every process of its group) and
# reported instead of holding the machine until an outer limit ends it.
# --skip-build runs what the first step built: SwiftPM 6.3 orders the traits' -D flags by a Set's
# hash order, which Swift seeds per process, so a second planning of the same build almost always
# sees new flags and recompiles every Strata module (333 files, about 90 s here, for nothing).
# If a local connection never comes up or the run goes quiet, the test process's stacks are kept
# and printed after the run (scripts/stacks-on-stall.sh).
scripts/stacks-on-stall.sh "$log_dir/test.log" "$log_dir/stacks.txt" &
watcher=$!
set +e
timeout --kill-after=30 1800 swift test --skip-build 2>&1 | tee "$log_dir/test.log"
status=${PIPESTATUS[0]}
set -e
kill "$watcher" 2>/dev/null || true
if [ -s "$log_dir/stacks.txt" ]; then
    cat "$log_dir/stacks.txt" >&2
fi
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    echo "The test run did not end within 30 minutes and was stopped." >&2
    exit 1
elif [ "$status" -ne 0 ]; then
    exit "$status"
fi

if [ "$skip_tsan" = 0 ]; then
    step "Running the stress tests under ThreadSanitizer"
    # halt_on_error stops the process at the first report; the grep catches a report even if
    # the runner still prints that the tests passed. The graceful shutdowns and the spans, with
    # their concurrent writers and nested tasks, run here too. The framework adapters hold no stress
    # tests, so this build leaves Hummingbird and Vapor out.
    set +e
    TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1" \
        timeout --kill-after=30 2400 swift test --sanitize=thread --scratch-path .build-tsan --traits Postgres,ServiceLifecycle,Tracing --filter "StressTests|MemoryStorageConcurrencyTests|MemoryPressureTests|ServiceLifecycleTests|TracingTests" 2>&1 | tee "$log_dir/tsan.log"
    status=${PIPESTATUS[0]}
    set -e
    if grep -q 'WARNING: ThreadSanitizer' "$log_dir/tsan.log"; then
        echo "ThreadSanitizer reported a data race (see above)." >&2
        exit 1
    fi
    if [ "$status" -ne 0 ]; then
        echo "The stress tests failed under ThreadSanitizer (exit $status)." >&2
        exit "$status"
    fi
fi

step "Building the documentation (any DocC warning fails the run)"
# One catalog per documented module; a broken ``symbol`` link, an undocumented parameter or a
# missing page is a warning, and --warnings-as-errors makes it fail. All of them in one run of the
# plugin: each run loads the package and checks the build again, about 30 s here, where a
# module's own catalog takes a few seconds.
targets=(Strata StrataTesting StrataHTTP StrataAsyncHTTPClient StrataObjects StrataSQLite StrataPostgres
    StrataSQLiteObjects StrataPostgresObjects StrataServiceLifecycle StrataTracing StrataHummingbird StrataVapor)
set +e
swift package generate-documentation "${targets[@]/#/--target=}" --warnings-as-errors 2>&1 | tee "$log_dir/docs.log"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
    echo "The documentation does not build cleanly (see above)." >&2
    exit 1
fi
documented=$(grep -c '^Finished building documentation for' "$log_dir/docs.log" || true)
if [ "$documented" -ne "${#targets[@]}" ]; then
    echo "Documentation was built for $documented of ${#targets[@]} modules (see above)." >&2
    exit 1
fi

step "Checking formatting"
swift format lint --strict --recursive Sources Tests Examples Package.swift

step "All checks passed"
