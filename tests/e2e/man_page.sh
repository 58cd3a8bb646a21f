#!/usr/bin/env bash
# doc/scalwsd.8: renders without a warning (groff, or man, when installed),
# lists every key of the key table (src/scalws/config/config_keys.c, as
# --print-config shows it) under its section, as --help and
# contrib/scalwsd.ini do (and no key the table does not have), and
# cmake --install puts it in share/man/man8.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MAN=$ROOT/doc/scalwsd.8
INI=$ROOT/contrib/scalwsd.ini
SRC=$ROOT/src/scalws
[ -f "$MAN" ] || fail "no $MAN"
rendered=""
if command -v groff >/dev/null; then
    groff -man -Tutf8 -ww -z "$MAN" 2>"$T/warn" || fail "groff failed: $(cat "$T/warn")"
    [ ! -s "$T/warn" ] || fail "groff warnings: $(cat "$T/warn")"
    rendered=groff
elif command -v man >/dev/null; then
    man --warnings -l "$MAN" >/dev/null 2>"$T/warn" || fail "man -l failed: $(cat "$T/warn")"
    [ ! -s "$T/warn" ] || fail "man warnings: $(cat "$T/warn")"
    rendered=man
else
    echo "note: neither groff nor man installed: rendering not checked"
fi

# The page's version is the program's (project() in CMakeLists.txt).
version=$("$SWS" --version | awk '{print $2}')
grep -q "^\.TH SCALWSD 8 \"[0-9-]*\" \"scalwsd $version\"" "$MAN" || fail "the .TH line does not say scalwsd $version"

# (section, key) pairs of the key table, as --print-config lists them
# ("key = value", or ";key =" for a key that is unset by default).
"$SWS" --print-config | awk '/^\[[a-z0-9]+\]$/{s = substr($0, 2, length($0) - 2)}
     s != "" && /^;?[a-z0-9_]+ =/ {k = $1; sub(/^;/, "", k); print s, k}' | sort -u >"$T/code"
[ "$(wc -l <"$T/code")" -ge 20 ] || fail "--print-config lists only $(wc -l <"$T/code") keys"

# The man page: the ".B key" tag line after ".TP" under ".SS [section]".
awk '/^\.S[SH] /{s = ""} /^\.SS \[[a-z0-9]+\]$/{s = substr($2, 2, length($2) - 2)}
     s != "" && prev == ".TP" && /^\.B [a-z0-9_]+$/ {print s, $2} {prev = $0}' "$MAN" | sort -u >"$T/man"
# --help: one "[section] key  default  help" line per key.
"$SWS" --help | awk '$1 ~ /^\[[a-z0-9]+\]$/ {print substr($1, 2, length($1) - 2), $2}' | sort -u >"$T/help"
# The example file: "key =" or ";key =" under "[section]".
awk '/^\[[a-z0-9]+\]$/{s = substr($0, 2, length($0) - 2)}
     s != "" && /^;?[a-z0-9_]+ =/ {k = $1; sub(/^;/, "", k); print s, k}' "$INI" | sort -u >"$T/ini"
for doc in man help ini; do
    missing=$(comm -23 "$T/code" "$T/$doc" | tr '\n' ';')
    extra=$(comm -13 "$T/code" "$T/$doc" | tr '\n' ';')
    [ -z "$missing" ] || fail "$doc lacks keys of the key table: $missing"
    [ -z "$extra" ] || fail "$doc lists keys the key table does not have: $extra"
done

# [route NAME]'s and [tls NAME]'s own keys (--help's "[route NAME] key"
# lines) under ".SS [route NAME]" (".SS [tls NAME]"), and no other there.
for named in route tls; do
    "$SWS" --help | awk -v n="[$named" '$1 == n && $2 == "NAME]" {print $3}' | sort -u >"$T/named_code"
    awk -v h=".SS [$named NAME]" '/^\.S[SH] /{s = ($0 == h)}
         s && prev == ".TP" && /^\.B [a-z0-9_]+$/ {print $2} {prev = $0}' "$MAN" | sort -u >"$T/named_man"
    [ -s "$T/named_code" ] || fail "--help lists no [$named NAME] key"
    cmp -s "$T/named_code" "$T/named_man" ||
        fail "[$named NAME] keys: --help has $(tr '\n' ' ' <"$T/named_code"), the man page $(tr '\n' ' ' <"$T/named_man")"
done

# cmake --install puts the page in share/man/man8 (the build dir holds CMakeCache.txt).
B=$(dirname "$SWS")
while [ "$B" != / ] && [ ! -f "$B/CMakeCache.txt" ]; do B=$(dirname "$B"); done
if [ -f "$B/CMakeCache.txt" ] && command -v cmake >/dev/null; then
    cmake --install "$B" --prefix "$T/inst" >"$T/install.log" 2>&1 || fail "cmake --install: $(tail -5 "$T/install.log")"
    cmp -s "$MAN" "$T/inst/share/man/man8/scalwsd.8" || fail "scalwsd.8 not installed to share/man/man8"
    installed=yes
else
    echo "note: no build directory above $SWS: install not checked"
    installed=no
fi
echo "man_page: ok ($(wc -l <"$T/code") keys in man, --help and the example; rendered by ${rendered:-nothing}; installed: $installed)"
