#!/usr/bin/env bash
# debian/ builds: dpkg-buildpackage -us -uc on a copy of the source tree (never
# in it), the three packages unpacked into a scratch root with dpkg -x (nothing
# is installed on the machine), their contents checked, scalwsd started from
# the unpacked files and asked for a page, examples/echo.c built against
# libturnloop-dev and run on libturnloop0, and lintian run (errors fail the
# test, warnings are listed). Skipped (77) without the packaging tools.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

for tool in dpkg-buildpackage dh lintian fakeroot; do
    command -v "$tool" >/dev/null || {
        echo "SKIP: no $tool (scripts/bootstrap --test installs it)"
        exit 77
    }
done

# Build-Depends keeps up with what scripts/bootstrap installs to build and run
# scalwsd (its run list), less the compiler (build-essential is implied) and
# curl (a client for people and tests, not a build input).
run_pkgs=$(sed -n '/^run=(/,/^)/p' "$ROOT/scripts/bootstrap" | sed '1d;$d' | tr -s ' \t' '\n' |
    grep -v -e '^$' -e '^#' -e '^build-essential$' -e '^curl$')
[ -n "$run_pkgs" ] || fail "no run=( ... ) list in scripts/bootstrap"
bdeps=$(sed -n '/^Build-Depends:/,/^[A-Z]/p' "$ROOT/debian/control" | sed 's/^Build-Depends://' |
    tr ',' '\n' | sed 's/([^)]*)//; s/^[[:space:]]*//; s/[[:space:]]*$//' | grep -v '^[A-Z]')
for p in $run_pkgs; do
    # A here-string, not a pipe: grep -q leaving early must not fail the writer.
    grep -qx "$p" <<<"$bdeps" || fail "debian/control Build-Depends lacks $p (scripts/bootstrap's run list)"
done

# The copy: what git tracks plus files not yet added (a developer's change in
# progress), never build trees; a tree that is no git checkout is copied whole
# but for its build directories.
ver=$(dpkg-parsechangelog -l "$ROOT/debian/changelog" -S Version)
upstream=${ver%-*}
src=$T/scalwsd-$upstream
mkdir -p "$src"
if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$ROOT" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -xf - -C "$src"
else
    tar -C "$ROOT" --exclude='./build*' --exclude='./obj-*' -cf - . | tar -xf - -C "$src"
fi
[ -f "$src/debian/rules" ] || fail "no debian/rules in the copy of $ROOT"
# 3.0 (quilt) wants the upstream tarball beside the tree: the copy without debian/.
tar -C "$T" --exclude="scalwsd-$upstream/debian" -czf "$T/scalwsd_$upstream.orig.tar.gz" \
    "scalwsd-$upstream"

# Source and binary packages; the symbols file must list every exported name
# (level 4: a new tl_ function without its line in debian/libturnloop0.symbols fails).
start=$SECONDS
(cd "$src" && DPKG_GENSYMBOLS_CHECK_LEVEL=4 DEB_BUILD_OPTIONS="parallel=$(nproc)" \
    timeout 900 dpkg-buildpackage -us -uc) >"$T/build.log" 2>&1 ||
    fail "dpkg-buildpackage: $(tail -30 "$T/build.log")"
build_secs=$((SECONDS - start))
changes=$T/scalwsd_${ver}_$(dpkg-architecture -qDEB_HOST_ARCH).changes
[ -f "$changes" ] || fail "no $changes"
deb() { ls "$T/$1_${ver}_"*.deb; }
for p in scalwsd libturnloop0 libturnloop-dev; do
    [ -f "$(deb "$p")" ] || fail "package $p not built"
done

root=$T/root
for p in scalwsd libturnloop0 libturnloop-dev; do
    dpkg -x "$(deb "$p")" "$root"
done
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
has() { grep -qx "./$2" <<<"$(dpkg-deb -c "$(deb "$1")" | awk '{print $6}')" || fail "$1 lacks /$2"; }

# scalwsd: the server, the units, the conffile, the man page.
has scalwsd usr/sbin/scalwsd
for u in scalwsd.service scalwsd@.service scalwsd.socket; do
    has scalwsd "lib/systemd/system/$u"
    cmp -s "$ROOT/contrib/systemd/$u" "$root/lib/systemd/system/$u" ||
        fail "packaged $u differs from contrib/systemd/$u"
done
grep -qx 'ExecStart=/usr/sbin/scalwsd --config /etc/scalwsd/scalwsd.ini' \
    "$root/lib/systemd/system/scalwsd.service" || fail "scalwsd.service ExecStart"
grep -qx 'User=scalwsd' "$root/lib/systemd/system/scalwsd.service" || fail "scalwsd.service User"
has scalwsd etc/scalwsd/scalwsd.ini
cmp -s "$ROOT/contrib/scalwsd.ini" "$root/etc/scalwsd/scalwsd.ini" || fail "packaged ini differs"
dpkg-deb -e "$(deb scalwsd)" "$T/ctl"
grep -qx /etc/scalwsd/scalwsd.ini "$T/ctl/conffiles" || fail "scalwsd.ini is not a conffile"
# logrotate: the access logs, with SIGUSR1 to the units (doc/operations.md, Rotation).
has scalwsd etc/logrotate.d/scalwsd
grep -q 'kill-who=main --signal=USR1' "$root/etc/logrotate.d/scalwsd" || fail "logrotate: no SIGUSR1"
has scalwsd usr/share/man/man8/scalwsd.8.gz
zcat "$root/usr/share/man/man8/scalwsd.8.gz" | cmp -s - "$ROOT/doc/scalwsd.8" || fail "man page differs"
# The user exists before debhelper's part of postinst starts scalwsd.service.
user_at=$(grep -n 'adduser --system --group .* scalwsd$' "$T/ctl/postinst" | cut -d: -f1 || true)
start_at=$(grep -n "deb-systemd-invoke .*scalwsd.service" "$T/ctl/postinst" | head -1 | cut -d: -f1 || true)
[ -n "$user_at" ] || fail "postinst makes no system user scalwsd"
if [ -z "$start_at" ] || [ "$user_at" -gt "$start_at" ]; then
    fail "postinst starts scalwsd.service before adduser (or not at all)"
fi
# The socket unit is the alternative to the service: never enabled by the package.
if grep -q "deb-systemd-helper enable 'scalwsd.socket'" "$T/ctl/postinst" &&
    ! grep -q "was-enabled 'scalwsd.socket'" "$T/ctl/postinst"; then
    fail "postinst enables scalwsd.socket"
fi

# libturnloop0: the shared object and its soname link, a symbols file.
# libturnloop-dev: the headers, the development link, the static library, turnloop.pc.
lib=usr/lib/$ma
has libturnloop0 "$lib/libturnloop.so.0.1.0"
[ "$(readlink "$root/$lib/libturnloop.so.0")" = libturnloop.so.0.1.0 ] || fail "libturnloop.so.0 link"
[ "$(readlink "$root/$lib/libturnloop.so")" = libturnloop.so.0 ] || fail "libturnloop.so link"
grep -q "libturnloop.so.0.1.0$" <<<"$(dpkg-deb -c "$(deb libturnloop-dev)")" &&
    fail "libturnloop-dev holds the shared object itself"
dpkg-deb -e "$(deb libturnloop0)" "$T/libctl"
[ -f "$T/libctl/symbols" ] || fail "libturnloop0 has no symbols file"
for f in usr/include/turnloop.h usr/include/turnloop_version.h "$lib/libturnloop.a" \
    "$lib/pkgconfig/turnloop.pc"; do
    has libturnloop-dev "$f"
done
grep -qx 'prefix=/usr' "$root/$lib/pkgconfig/turnloop.pc" || fail "turnloop.pc prefix"

# examples/echo.c through the packaged turnloop.pc, run on the packaged
# libturnloop.so.0 (the sysroot maps /usr to the scratch root).
pc() { PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$root/$lib/pkgconfig pkg-config "$@" turnloop; }
[ "$(pc --modversion)" = "$upstream" ] || fail "turnloop.pc version $(pc --modversion)"
# shellcheck disable=SC2046 # pkg-config's words are the compiler's arguments
cc "$ROOT/examples/echo.c" $(pc --cflags --libs) -o "$T/echo" 2>"$T/cc.log" ||
    fail "echo.c against libturnloop-dev: $(cat "$T/cc.log")"
grep -q 'NEEDED.*libturnloop\.so\.0' <<<"$(readelf -d "$T/echo")" || fail "echo is not linked to libturnloop.so.0"
LD_LIBRARY_PATH=$root/$lib "$T/echo" 0 >"$T/echo.log" 2>&1 &
echo_pid=$!
for _ in $(seq 100); do
    grep -qs "echo on" "$T/echo.log" && break
    kill -0 "$echo_pid" 2>/dev/null || break
    sleep 0.05
done
echo_port=$(sed -n 's/^echo on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$T/echo.log")
[ -n "$echo_port" ] || fail "the packaged example did not say its port: $(cat "$T/echo.log")"
got=$(PORT=$echo_port python3 -c '
import os, socket
s = socket.create_connection(("127.0.0.1", int(os.environ["PORT"])), timeout=5)
s.sendall(b"from the package\n")
print(s.recv(64).decode().strip())')
kill "$echo_pid" 2>/dev/null || true
wait "$echo_pid" 2>/dev/null || true
[ "$got" = "from the package" ] || fail "the packaged example echoed '$got'"

# scalwsd from the unpacked files, with the packaged configuration, as the unit
# runs it (ExecStartPre's check first), on a port the kernel picks.
sws=$root/usr/sbin/scalwsd
ini=$root/etc/scalwsd/scalwsd.ini
out=$("$sws" --check-config --config "$ini" 2>&1) || fail "--check-config on the packaged ini: $out"
if grep -q -- --ready-file <<<"$("$sws" --help 2>&1)"; then
    "$sws" --config "$ini" --listen 127.0.0.1:0 --ready-file "$T/ready" 2>"$T/log" &
    SWS_PID=$!
    end=$((SECONDS + 30))
    while [ ! -s "$T/ready" ] && [ "$SECONDS" -le "$end" ] && kill -0 "$SWS_PID" 2>/dev/null; do
        sleep 0.05
    done
    PORT=$(awk '$1 == "listen" { n = split($2, a, ":"); print a[n]; exit }' "$T/ready" 2>/dev/null)
    how="--ready-file"
else
    # No --ready-file in this scalwsd (it names the configured address, not
    # the bound one): a port the kernel handed out and released, retried
    # when another process takes it first.
    for _ in 1 2 3 4 5; do
        PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        "$sws" --config "$ini" --listen "127.0.0.1:$PORT" 2>"$T/log" &
        SWS_PID=$!
        end=$((SECONDS + 30))
        while ! grep -qs "listening on" "$T/log" && [ "$SECONDS" -le "$end" ] &&
            kill -0 "$SWS_PID" 2>/dev/null; do
            sleep 0.05
        done
        kill -0 "$SWS_PID" 2>/dev/null && break
        wait "$SWS_PID" 2>/dev/null || true
        SWS_PID=""
        grep -qi "in use" "$T/log" || fail "the packaged scalwsd did not start"
    done
    how="a free port (no --ready-file)"
fi
if [ -z "$SWS_PID" ] || [ -z "$PORT" ] || ! kill -0 "$SWS_PID" 2>/dev/null; then
    fail "the packaged scalwsd did not start"
fi
body=$(curl -s -m 5 "http://127.0.0.1:$PORT/") || fail "curl to the packaged scalwsd"
[ "$body" = "Hello from scalwsd" ] || fail "the packaged scalwsd answered '$body'"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "the packaged scalwsd exited $SWS_STATUS after SIGTERM"

# lintian on the source and the binary packages: errors fail, the rest is listed.
lintian --fail-on error -I --pedantic --show-overrides "$changes" \
    >"$T/lintian" 2>&1 || fail "lintian: $(grep -v '^running with root' "$T/lintian")"
tags=$(grep -E '^[EWIPO]: ' "$T/lintian" || true)
warnings=$(printf '%s\n' "$tags" | grep -c '^W: ' || true)
[ -z "$tags" ] || printf 'lintian (not failing):\n%s\n' "$tags"
echo "ok: $ver built in ${build_secs}s; contents, conffile, postinst order, symbols," \
    "the example on libturnloop0, scalwsd from the package on port $PORT by $how; lintian: no errors," \
    "$warnings warnings"
