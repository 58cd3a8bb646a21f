#!/usr/bin/env bash
# Installs the build into a scratch prefix, builds examples/echo.c against
# the installed header and library through pkg-config, and checks that it
# echoes; then checks the shared object exports only public tl_ names.
set -euo pipefail
build=$1 src=$2 sanitize=${3:-}
tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
pid=
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
flags=()
[ -z "$sanitize" ] || flags=(-fsanitize="$sanitize") # the library was built instrumented
cc "${flags[@]}" "$src/examples/echo.c" $(pkg-config --cflags --libs turnloop) -o "$tmp/echo"
exports=$(nm -D --defined-only "$tmp/prefix/lib/libturnloop.so" | awk '{print $3}')
bad=$(printf '%s\n' "$exports" | grep -v '^tl_[a-z]' || true)
[ -z "$bad" ] || { echo "exported beyond the tl_ API: $bad"; exit 1; }
printf '%s\n' "$exports" | grep -q '^tl__' && { echo "internal tl__ names exported"; exit 1; }
# Port 0: the kernel picks, and the example's first line names the port.
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/echo" 0 >"$tmp/log" 2>&1 &
pid=$!
for _ in $(seq 50); do grep -q "echo on" "$tmp/log" && break; sleep 0.1; done
port=$(sed -n 's/^echo on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$tmp/log")
[ -n "$port" ] || { echo "the example did not say its port: $(cat "$tmp/log")"; exit 1; }
# The header's version and the library's agree.
cat >"$tmp/version.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <turnloop.h>
int main(void) {
    unsigned v = (TL_VERSION_MAJOR << 16) | (TL_VERSION_MINOR << 8) | TL_VERSION_PATCH;
    printf("%s\n", tl_version_string());
    return tl_version() == v && strcmp(tl_version_string(), TL_VERSION_STRING) == 0 ? 0 : 1;
}
C
cc "${flags[@]}" "$tmp/version.c" $(pkg-config --cflags --libs turnloop) -o "$tmp/version"
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/version" >/dev/null || { echo "tl_version() differs from TL_VERSION_*"; exit 1; }
got=$(PORT=$port python3 - <<'PY'
import os, socket
s = socket.create_connection(("127.0.0.1", int(os.environ["PORT"])), timeout=5)
s.sendall(b"installed and linked\n")
print(s.recv(64).decode().strip())
PY
)
[ "$got" = "installed and linked" ] || { echo "echo answered '$got'"; exit 1; }
echo "ok: installed, linked through pkg-config, echoed; $(printf '%s\n' "$exports" | wc -l) tl_ exports"
