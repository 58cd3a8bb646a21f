# Helpers for the tests that ask the same questions over HTTP/1.1 and HTTP/2
# (error_pages.sh, static_fallback.sh), sourced after lib.sh: P is curl's
# protocol option without its dashes (http1.1 or http2-prior-knowledge), PORT
# the server's.

# U PATH: the URL of PATH on the server.
U() { echo "http://127.0.0.1:$PORT$1"; }
# expect WHAT GOT WANT
expect() { [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"; }
# H [curl args...]: curl for the protocol under test, the path sent as it is.
H() { curl -s -m 10 --path-as-is "--$P" "$@"; }
# code PATH [curl args...]: the answer's status.
code() {
    local p=$1
    shift
    H -o /dev/null -w '%{http_code}' "$@" "$(U "$p")"
}
# hdr NAME PATH [curl args...]: the value of the answer's field NAME (CR dropped).
hdr() {
    local n=$1 p=$2
    shift 2
    H -o /dev/null -D - "$@" "$(U "$p")" | tr -d '\r' |
        awk -v n="$(echo "$n" | tr A-Z a-z)" -F': ' 'tolower($1) == n { print $2; exit }'
}
