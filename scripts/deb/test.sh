#!/bin/bash
# Checks a custody .deb without installing it on this machine or booting systemd:
#
#   scripts/deb/test.sh custody_<version>_<arch>.deb
#
# 1. what it holds: the binary, the units, the conffile, a man page per command, completions,
#    the copyright and changelog; Depends: computed (libsodium among them, adduser);
# 2. unpacked into a throwaway root (dpkg-deb -x), its units pass `systemd-analyze verify`
#    and `systemd-analyze security` rates custody.service's exposure at 2.0 or less;
# 3. the packaged binary, started as custody.socket and custody.service would start it
#    (systemd-socket-activate passes the listening socket; a notify socket stands in for
#    systemd's), says READY=1 with the revision once it serves, answers /readyz through the
#    passed socket, reloads the bundle directory on SIGHUP (RELOADING=1, then READY=1 with
#    the new revision), and stops on SIGTERM within the unit's TimeoutStopSec (STOPPING=1,
#    exit 0);
# 4. lintian, when installed: no errors. DEB_TEST_LINTIAN_ALLOW names tags let through (`make
#    deb-check`, which packages the debug build: its binary finds the toolchain's Swift runtime
#    through a RUNPATH, custom-library-search-path, where the release binary has it linked in).
set -euo pipefail

deb=${1:?usage: scripts/deb/test.sh custody_VERSION_ARCH.deb}
[ -f "$deb" ] || { echo "deb-test: no package at $deb (make deb)" >&2; exit 1; }
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
serve_pid=""
cleanup() {
    [ -n "$serve_pid" ] && kill -KILL "$serve_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
failures=0
check() { # check DESCRIPTION COMMAND...
    local what=$1
    shift
    if "$@" >"$work/check.out" 2>&1; then
        echo "ok   $what"
    else
        echo "FAIL $what"
        sed 's/^/     /' "$work/check.out" | head -20
        failures=$((failures + 1))
    fi
}

# 1. Contents and metadata.
dpkg-deb --contents "$deb" | awk '{print $1, $6}' | sed 's#\./#/#' >"$work/contents"
dpkg-deb --field "$deb" Depends >"$work/depends"
for path in /usr/bin/custody /lib/systemd/system/custody.service /lib/systemd/system/custody.socket \
    /etc/custody/serve.conf /etc/custody/bundle/ /usr/share/man/man1/custody.1.gz \
    /usr/share/man/man1/custody-serve.1.gz /usr/share/man/man1/custody-tokens-create.1.gz \
    /usr/share/bash-completion/completions/custody /usr/share/zsh/vendor-completions/_custody \
    /usr/share/fish/vendor_completions.d/custody.fish /usr/share/doc/custody/copyright \
    /usr/share/doc/custody/changelog.gz /usr/share/doc/custody/operations.md.gz; do
    check "holds $path" grep -q " $path\$" "$work/contents"
done
check "/usr/bin/custody is -rwxr-xr-x root/root" grep -q '^-rwxr-xr-x /usr/bin/custody$' "$work/contents"
check "serve.conf is a conffile" bash -c "dpkg-deb --ctrl-tarfile '$deb' | tar -xO ./conffiles | grep -qx /etc/custody/serve.conf"
check "Depends: libsodium, computed" grep -q 'libsodium' "$work/depends"
check "Depends: adduser (postinst)" grep -q 'adduser' "$work/depends"
check "no Swift runtime library needed (linked in)" bash -c "! grep -q swift '$work/depends'"
manuals=$(grep -c '/usr/share/man/man1/custody.*\.1\.gz$' "$work/contents" || true)
commands=$(dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/bash-completion/completions/custody | wc -c)
check "a man page per command ($manuals pages)" test "$manuals" -ge 40
check "bash completion is a script ($commands bytes)" test "$commands" -gt 1000

# 2. The units, unpacked into a throwaway root.
root=$work/root
dpkg-deb -x "$deb" "$root"
# verify needs the units those two name (sysinit.target …) and the commands they run
# (/bin/kill): the host's, copied into the throwaway root beside the package's.
cp -n /lib/systemd/system/*.target "$root/lib/systemd/system/" 2>/dev/null || true
mkdir -p "$root/bin" && cp /bin/kill "$root/bin/kill"
systemd-analyze verify --man=no --root="$root" /lib/systemd/system/custody.socket \
    /lib/systemd/system/custody.service >"$work/verify" 2>&1 || true
check "systemd-analyze verify custody.service custody.socket: nothing said" bash -c "cat '$work/verify'; ! test -s '$work/verify'"
systemd-analyze security --offline=true --root="$root" custody.service >"$work/security" 2>&1 || true
exposure=$(sed -n 's/.*Overall exposure level for custody.service: \([0-9.]*\).*/\1/p' "$work/security")
check "systemd-analyze security: exposure ${exposure:-unknown} <= 2.0" \
    awk -v e="${exposure:-99}" 'BEGIN { exit !(e <= 2.0) }'

# 3. The packaged service, socket-activated.
stop_timeout=$(sed -n 's/^TimeoutStopSec=\([0-9]*\)$/\1/p' "$root/lib/systemd/system/custody.service")
mkdir -p "$work/state" "$work/bundle"
cp -r "$repo/policies/." "$work/bundle/"
cat >"$work/serve.conf" <<CONF
{
  "state": "$work/state/state.sqlite",
  "bundle": "$work/bundle",
  "log-level": "notice"
}
CONF
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
notify=$work/notify.sock
python3 - "$notify" >"$work/notifications" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(120)
try:
    while True:
        message = s.recv(4096).decode()
        print(message.replace("\n", " | "), flush=True)
        if message.startswith("STOPPING=1"):
            break
except socket.timeout:
    pass
PY
listener=$!
for _ in $(seq 50); do [ -S "$notify" ] && break; sleep 0.1; done
systemd-socket-activate -l "127.0.0.1:$port" --fdname=http -E NOTIFY_SOCKET="$notify" \
    -E CUSTODY_MASTER_KEY_FILE="$work/state/master.key" \
    "$root/usr/bin/custody" serve --config "$work/serve.conf" 2>"$work/serve.log" &
serve_pid=$!
ready() { grep -q "READY=1" "$work/notifications"; }
# The socket answers from the start (systemd holds connections until the service accepts).
code=$(curl -s -o "$work/readyz" -w '%{http_code}' --max-time 60 "http://127.0.0.1:$port/readyz" || true)
for _ in $(seq 100); do ready && break; sleep 0.1; done
check "READY=1 with the revision in STATUS=" grep -q "READY=1 | STATUS=serving revision" "$work/notifications"
check "/readyz through the passed socket answers 200 (got $code)" test "$code" = 200
check "serve says where it listens (the passed socket)" grep -q "custody serve: http on 127.0.0.1:$port" "$work/serve.log"
before=$(curl -s "http://127.0.0.1:$port/readyz" | python3 -c 'import json, sys; print(json.load(sys.stdin)["revision"])' || true)
# A change to the bundle, then SIGHUP: the new revision is in force when READY=1 comes back.
# (A line added to a file is a new revision: a revision is the hash of the files' bytes.)
echo >>"$work/bundle/tenant.json"
kill -HUP "$serve_pid"
for _ in $(seq 100); do [ "$(grep -c 'READY=1' "$work/notifications")" -ge 2 ] && break; sleep 0.1; done
after=$(curl -s "http://127.0.0.1:$port/readyz" | python3 -c 'import json, sys; print(json.load(sys.stdin)["revision"])' || true)
check "SIGHUP: RELOADING=1, then READY=1" bash -c "grep -q 'RELOADING=1 | MONOTONIC_USEC=' '$work/notifications' && test \$(grep -c 'READY=1' '$work/notifications') -ge 2"
check "SIGHUP applied the changed bundle ($before -> $after)" bash -c "test -n '$after' && test '$before' != '$after'"
started=$(date +%s.%N)
kill -TERM "$serve_pid"
status=0
timeout "${stop_timeout:-30}" tail --pid="$serve_pid" -f /dev/null || status=$?
wait "$serve_pid" || true
stopped=$(python3 -c "print(round($(date +%s.%N) - $started, 2))")
serve_pid=""
check "SIGTERM: stopped within TimeoutStopSec=${stop_timeout:-30} (in ${stopped} s)" test "$status" = 0
wait "$listener" || true
check "SIGTERM: STOPPING=1" grep -q "STOPPING=1" "$work/notifications"

# 4. lintian, when it is here.
if command -v lintian >/dev/null; then
    lintian --no-tag-display-limit ${DEB_TEST_LINTIAN_ALLOW:+--suppress-tags "$DEB_TEST_LINTIAN_ALLOW"} "$deb" \
        >"$work/lintian" 2>&1 || true
    check "lintian: no errors" bash -c "! grep -q '^E:' '$work/lintian'"
    grep -E '^(E|W):' "$work/lintian" | sed 's/^/     /' || true
else
    echo "skip lintian: not installed (apt-get install lintian)"
fi

if [ "$failures" -gt 0 ]; then
    echo "deb-test: $failures check(s) failed; the service's log:"
    sed 's/^/     /' "$work/serve.log" | tail -30
    exit 1
fi
echo "deb-test: every check passed"
