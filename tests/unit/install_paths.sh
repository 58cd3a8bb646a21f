#!/usr/bin/env bash
# cmake --install writes the paths of the prefix given at install time (issue
# 35): the config in /etc/scalwsd for prefix /usr (not /usr/etc), the units'
# ExecStart and --config naming the installed binary and config, whatever
# prefix the build was configured with; and the installed unit's own command
# lines run: ExecStartPre checks the installed config with the installed binary.
#   install_paths.sh BUILD_DIR
set -euo pipefail
B=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

DESTDIR=$T/d cmake --install "$B" --prefix /usr >"$T/log" 2>&1 || fail "install: $(tail -5 "$T/log")"
[ -f "$T/d/etc/scalwsd/scalwsd.ini" ] || fail "prefix /usr: no /etc/scalwsd/scalwsd.ini"
[ ! -e "$T/d/usr/etc" ] || fail "prefix /usr: a /usr/etc: $(find "$T/d/usr/etc")"
for u in scalwsd.service scalwsd@.service scalwsd.socket; do
    [ -f "$T/d/usr/lib/systemd/system/$u" ] || fail "prefix /usr: no $u"
done
grep -qx 'ExecStart=/usr/sbin/scalwsd --config /etc/scalwsd/scalwsd.ini' "$T/d/usr/lib/systemd/system/scalwsd.service" ||
    fail "prefix /usr: $(grep ExecStart= "$T/d/usr/lib/systemd/system/scalwsd.service")"
grep -qx 'ExecStartPre=/usr/sbin/scalwsd --check-config --config /etc/scalwsd/%i.ini' "$T/d/usr/lib/systemd/system/scalwsd@.service" ||
    fail "prefix /usr template: $(grep ExecStartPre= "$T/d/usr/lib/systemd/system/scalwsd@.service")"

P=$T/p
cmake --install "$B" --prefix "$P" >"$T/log" 2>&1 || fail "install: $(tail -5 "$T/log")"
unit=$P/lib/systemd/system/scalwsd.service
grep -qx "ExecStart=$P/sbin/scalwsd --config $P/etc/scalwsd/scalwsd.ini" "$unit" ||
    fail "prefix $P: $(grep ExecStart= "$unit")"
! grep -q /usr/local "$unit" || fail "prefix $P: the unit names /usr/local: $(grep /usr/local "$unit")"
pre=$(sed -n 's/^ExecStartPre=//p' "$unit")
read -r -a cmd <<<"$pre"
"${cmd[@]}" >"$T/out" 2>&1 || fail "the installed unit's ExecStartPre: $(cat "$T/out")"
grep -q "configuration ok ($P/etc/scalwsd/scalwsd.ini)" "$T/out" || fail "ExecStartPre said: $(cat "$T/out")"
echo "install_paths: ok"
