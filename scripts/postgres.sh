#!/usr/bin/env bash
# A throwaway PostgreSQL server on 127.0.0.1 for Strata's tests, demo and benchmarks.
#
#   eval "$(scripts/postgres.sh start)"    # starts one; prints the variables to export
#   scripts/postgres.sh env  [FOLDER]       # prints them again for a running server
#   scripts/postgres.sh stop [FOLDER]       # stops it and deletes its folder
#   scripts/postgres.sh kill FOLDER         # stops it at once (as a crash would), keeping its data
#   scripts/postgres.sh start FOLDER        # starts a stopped server again, on the same port
#
# `start` installs Debian's `postgresql` package when no `initdb` is found (under
# /usr/lib/postgresql/*/bin or on PATH), runs `initdb -A trust` in a new temporary folder (or
# FOLDER, or $STRATA_POSTGRES_DIR) as an unprivileged user when run as root (initdb refuses
# root), and starts the server on a free port with fsync off, listening on 127.0.0.1 only, with
# TLS on under a self-signed certificate for localhost (FOLDER/root.crt, to trust it). It
# creates the database `strata` and prints STRATA_POSTGRES_URL and STRATA_POSTGRES_DIR. FOLDER
# defaults to $STRATA_POSTGRES_DIR. Messages go to standard error; standard output carries only
# the exports. Exits non-zero, saying why, when the server cannot be started.
set -euo pipefail

say() { printf 'postgres.sh: %s\n' "$*" >&2; }
fail() { say "$*"; exit 1; }

find_bin() {
    local dir
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then
            echo "$dir"
            return 0
        fi
    done
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
        dirname "$(command -v initdb)"
        return 0
    fi
    return 1
}

install_postgres() {
    command -v apt-get >/dev/null 2>&1 || fail "PostgreSQL is not installed and apt-get is not available: install PostgreSQL (initdb, pg_ctl) and try again"
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || fail "PostgreSQL is not installed; installing it needs root (or sudo)"
        sudo="sudo"
    fi
    say "installing Debian's postgresql package"
    export DEBIAN_FRONTEND=noninteractive
    if ! $sudo apt-get install -y -q postgresql >&2; then
        $sudo apt-get update -q >&2 || true
        $sudo apt-get install -y -q postgresql >&2 || fail "apt-get install postgresql failed"
    fi
}

# Runs a command as the server's user: ourselves, or an unprivileged user when we are root.
as_user() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u "$server_user" -- "$@"
    else
        "$@"
    fi
}

choose_user() {
    server_user=$(id -un)
    if [ "$(id -u)" -eq 0 ]; then
        server_user=postgres
        if ! id -u "$server_user" >/dev/null 2>&1; then
            say "creating the system user $server_user"
            useradd --system --no-create-home --shell /usr/sbin/nologin "$server_user" \
                || fail "cannot create the user $server_user to run PostgreSQL (initdb refuses root)"
        fi
    fi
}

port_is_free() {
    ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

print_env() {
    local folder=$1
    [ -f "$folder/port" ] || fail "$folder holds no server started by this script"
    printf 'export STRATA_POSTGRES_URL=%q\n' "postgres://postgres@127.0.0.1:$(cat "$folder/port")/strata"
    printf 'export STRATA_POSTGRES_DIR=%q\n' "$folder"
}

# A self-signed certificate for "localhost" (and 127.0.0.1), so the server also accepts TLS: the
# tests of sslmode connect with it and check it. Clients that do not ask for TLS are unaffected.
make_certificate() {
    local folder=$1
    if ! command -v openssl >/dev/null 2>&1; then
        command -v apt-get >/dev/null 2>&1 || fail "openssl is not installed: install it and try again"
        say "installing openssl"
        apt-get install -y -qq openssl >&2 || fail "cannot install openssl"
    fi
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=localhost" \
        -addext "subjectAltName=DNS:localhost" \
        -keyout "$folder/data/server.key" -out "$folder/data/server.crt" >"$folder/openssl.log" 2>&1 \
        || { cat "$folder/openssl.log" >&2; fail "openssl could not make the server's certificate"; }
    chmod 600 "$folder/data/server.key"
    [ "$(id -u)" -eq 0 ] && chown "$server_user" "$folder/data/server.key" "$folder/data/server.crt"
    cp "$folder/data/server.crt" "$folder/root.crt"
}

start_server() {
    local folder=$1 port=$2 tls=""
    [ -f "$folder/data/server.crt" ] && tls="-c ssl=on"
    as_user "$bin/pg_ctl" -D "$folder/data" -l "$folder/server.log" -w -t 30 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $folder -c fsync=off -c full_page_writes=off -c max_connections=300 $tls" \
        start >&2
}

command=${1:-}
folder=${2:-${STRATA_POSTGRES_DIR:-}}

case "$command" in
start)
    if ! bin=$(find_bin); then
        install_postgres
        bin=$(find_bin) || fail "the postgresql package installed no initdb under /usr/lib/postgresql/*/bin"
    fi
    choose_user
    if [ -n "$folder" ] && [ -f "$folder/data/PG_VERSION" ]; then
        # A server this script made before: start it again on its port.
        start_server "$folder" "$(cat "$folder/port")" || fail "cannot restart the server in $folder (see $folder/server.log)"
        print_env "$folder"
        exit 0
    fi
    [ -n "$folder" ] || folder=$(mktemp -d "${TMPDIR:-/tmp}/strata-postgres.XXXXXX")
    mkdir -p "$folder"
    chmod 700 "$folder"
    [ "$(id -u)" -eq 0 ] && chown "$server_user" "$folder"
    as_user "$bin/initdb" -A trust -U postgres -E UTF8 --locale=C --no-sync -D "$folder/data" >"$folder/initdb.log" 2>&1 \
        || { cat "$folder/initdb.log" >&2; fail "initdb failed in $folder"; }
    make_certificate "$folder"
    started=0
    for _ in 1 2 3 4 5 6 7 8; do
        port=$((20000 + RANDOM % 40000))
        port_is_free "$port" || continue
        if start_server "$folder" "$port"; then
            started=1
            break
        fi
    done
    [ "$started" = 1 ] || { cat "$folder/server.log" >&2 || true; fail "PostgreSQL did not start (see above)"; }
    echo "$port" >"$folder/port"
    as_user "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres strata >&2 || fail "createdb strata failed"
    say "PostgreSQL $("$bin/pg_ctl" --version | awk '{print $3}') on 127.0.0.1:$port, data in $folder"
    print_env "$folder"
    ;;
env)
    [ -n "$folder" ] || fail "give the server's folder or set STRATA_POSTGRES_DIR"
    print_env "$folder"
    ;;
stop | kill)
    [ -n "$folder" ] || fail "give the server's folder or set STRATA_POSTGRES_DIR"
    bin=$(find_bin) || fail "no pg_ctl found"
    choose_user
    if [ "$command" = kill ]; then
        as_user "$bin/pg_ctl" -D "$folder/data" -m immediate -w stop >&2
    else
        as_user "$bin/pg_ctl" -D "$folder/data" -m fast -w stop >&2 || true
        case "$folder" in
        */strata-postgres.*) rm -rf "$folder" ;;
        *) say "left $folder in place (not made by this script)" ;;
        esac
    fi
    ;;
*)
    echo "usage: scripts/postgres.sh start [FOLDER] | env [FOLDER] | stop [FOLDER] | kill FOLDER" >&2
    exit 2
    ;;
esac
