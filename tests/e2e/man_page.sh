#!/usr/bin/env bash
# doc/scalwsd.8: renders without a warning (groff, or man, when installed),
# lists every key config.c accepts under its section, as --help and
# contrib/scalwsd.ini do (and no key config.c does not accept), and
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

# (section, key) pairs config.c accepts; a section handed to <section>_config.c
# takes that file's keys (as example_config.sh reads them).
keys_of() {
    grep -o 'strcmp(section, "[a-z_]*")\|strcmp(key, "[a-z_]*")' "$1" |
        sed -e 's/strcmp(section, "\(.*\)")/section \1/' -e 's/strcmp(key, "\(.*\)")/key \1/'
}
keys_of "$SRC/config.c" | while read -r kind name; do
    echo "$kind $name"
    if [ "$kind" = section ] && [ -f "$SRC/${name}_config.c" ]; then
        keys_of "$SRC/${name}_config.c" | grep '^key ' || true
    elif [ "$kind" = section ] && [ -f "$SRC/../$name/${name}_config.c" ]; then
        keys_of "$SRC/../$name/${name}_config.c" | grep '^key ' || true # src/tls/tls_config.c
    fi
done | awk '$1 == "section" {s = $2} $1 == "key" && s != "" {print s, $2}' | sort -u >"$T/code"
[ "$(wc -l <"$T/code")" -ge 20 ] || fail "found only $(wc -l <"$T/code") keys in config.c"

# The man page: the ".B key" tag line after ".TP" under ".SS [section]".
awk '/^\.S[SH] /{s = ""} /^\.SS \[[a-z]+\]$/{s = substr($2, 2, length($2) - 2)}
     s != "" && prev == ".TP" && /^\.B [a-z_]+$/ {print s, $2} {prev = $0}' "$MAN" | sort -u >"$T/man"
# --help: the words before each default on the "[section]" lines and their continuations.
"$SWS" --help | awk '/^  \[[a-z]+\]/{s = substr($1, 2, length($1) - 2); $1 = ""}
     /^[^ ]/{s = ""} s != "" {n = split($0, part, ","); for (i = 1; i <= n; i++) {
        split(part[i], w, " "); if (w[1] ~ /^[a-z_]+$/) print s, w[1] }}' | sort -u >"$T/help"
# The example file: "key =" or ";key =" under "[section]".
awk '/^\[[a-z]+\]$/{s = substr($0, 2, length($0) - 2)}
     s != "" && /^;?[a-z_]+ =/ {k = $1; sub(/^;/, "", k); print s, k}' "$INI" | sort -u >"$T/ini"
for doc in man help ini; do
    missing=$(comm -23 "$T/code" "$T/$doc" | tr '\n' ';')
    extra=$(comm -13 "$T/code" "$T/$doc" | tr '\n' ';')
    [ -z "$missing" ] || fail "$doc lacks keys config.c accepts: $missing"
    [ -z "$extra" ] || fail "$doc lists keys config.c does not accept: $extra"
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
