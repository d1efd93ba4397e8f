#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests: `start DIR` installs Debian's PostgreSQL when
# it is missing, makes a cluster in DIR (as a user other than root: PostgreSQL refuses to run
# as root), starts it on a free loopback port with its socket in DIR, and prints its URL;
# `stop DIR` stops it and deletes DIR. For the fault tests: `halt DIR` stops it as a crash would
# (`-m immediate`: no shutdown checkpoint, clients cut off) and `resume DIR` starts it again on
# the same port. Nothing outside DIR is touched (but the package).
set -euo pipefail

usage="usage: test-postgres.sh start|stop|halt|resume DIR"
command=${1:?$usage}
dir=${2:?$usage}

bindir() {
    local found
    found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
    [ -n "$found" ] && [ -x "$found/initdb" ] && echo "$found"
}

as_owner() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# Starts the cluster in $2 on port $3 with options $4; its output goes to $2/server.log, never to ours (a test
# reading this script's output to its end must not wait for the server to exit).
launch() {
    as_owner "$1/pg_ctl" -D "$2/data" -l "$2/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $3 -k $2 -c fsync=off $4 -c max_connections=300" start \
        </dev/null >/dev/null 2>&1 \
        || { cat "$2/server.log" >&2; exit 1; }
}

case "$command" in
start)
    if [ -z "$(bindir)" ]; then
        echo "Installing PostgreSQL (Debian's postgresql package) for the tests" >&2
        sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
        $sudo apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends postgresql >&2
    fi
    bin=$(bindir) || { echo "test-postgres.sh: no PostgreSQL server found after installing it" >&2; exit 1; }
    if [ -f "$dir/data/postmaster.pid" ]; then
        as_owner "$bin/pg_ctl" -D "$dir/data" stop -m immediate >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    as_owner "$bin/initdb" -D "$dir/data" -U custody -A trust --no-sync -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    echo "$port" >"$dir/port"
    # Commits are acknowledged before their WAL is written (fast, and safe for a cluster that is
    # only ever stopped cleanly), unless CUSTODY_TEST_POSTGRES_DURABLE=1: a cluster that `halt`
    # stops as a crash would must keep what it acknowledged.
    durability="-c synchronous_commit=off"
    [ "${CUSTODY_TEST_POSTGRES_DURABLE:-}" = 1 ] && durability=""
    echo "$durability" >"$dir/durability"
    launch "$bin" "$dir" "$port" "$durability"
    echo "postgres://custody@127.0.0.1:$port/postgres?sslmode=disable"
    ;;
halt)
    bin=$(bindir) || { echo "test-postgres.sh: no PostgreSQL server" >&2; exit 1; }
    as_owner "$bin/pg_ctl" -D "$dir/data" stop -m immediate -w >/dev/null
    ;;
resume)
    bin=$(bindir) || { echo "test-postgres.sh: no PostgreSQL server" >&2; exit 1; }
    launch "$bin" "$dir" "$(cat "$dir/port")" "$(cat "$dir/durability")"
    ;;
stop)
    bin=$(bindir) || exit 0
    if [ -f "$dir/data/postmaster.pid" ]; then
        as_owner "$bin/pg_ctl" -D "$dir/data" stop -m fast -w >/dev/null 2>&1 \
            || as_owner "$bin/pg_ctl" -D "$dir/data" stop -m immediate -w >/dev/null 2>&1 || true
    fi
    # Deleted only once no server runs on it: a server whose directory is gone is one nothing
    # could find and stop again.
    if [ -f "$dir/data/postmaster.pid" ]; then
        echo "test-postgres.sh: the server in $dir/data would not stop; left as it is" >&2
        exit 1
    fi
    rm -rf "$dir"
    ;;
*)
    echo "$usage" >&2
    exit 2
    ;;
esac
