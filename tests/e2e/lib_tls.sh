# Helpers for the tests of tls listeners (tls.sh, tls_sni.sh), sourced after
# lib.sh: certificates made here by openssl req, the certificate a name is
# served, the metrics summed over loops, a connection held open across reloads.
command -v openssl >/dev/null || { echo "skip: no openssl(1)"; exit 77; }

# mkcert FILE ec|rsa NAME[,NAME...]: a self-signed $T/FILE.pem and $T/FILE.key
# (EC P-256 or RSA 2048, two days), its CN the first name, every name in its
# subjectAltName (an IPv4 address as IP:, the rest as DNS:).
mkcert() {
    local kt=(-newkey ec -pkeyopt ec_paramgen_curve:P-256) names san=() n
    [ "$2" = rsa ] && kt=(-newkey rsa:2048)
    IFS=, read -ra names <<<"$3"
    for n in "${names[@]}"; do
        if [[ $n =~ ^[0-9.]+$ ]]; then san+=("IP:$n"); else san+=("DNS:$n"); fi
    done
    openssl req -x509 "${kt[@]}" -nodes -days 2 -subj "/CN=${names[0]}" \
        -addext "subjectAltName=$(IFS=,; echo "${san[*]}")" \
        -keyout "$T/$1.key" -out "$T/$1.pem" 2>/dev/null || fail "openssl req $1"
}

# fingerprint FILE: the SHA-256 fingerprint of the certificate in FILE.
fingerprint() { openssl x509 -noout -fingerprint -sha256 -in "$1" | cut -d= -f2; }

# served NAME [s_client options]: the fingerprint of the certificate served on
# PORT for NAME ("-": a hello without SNI); empty when none was.
served() {
    local name=$1 sni
    shift
    if [ "$name" = - ]; then sni=(-noservername); else sni=(-servername "$name"); fi
    timeout 10 openssl s_client -connect "127.0.0.1:$PORT" "${sni[@]}" "$@" </dev/null 2>/dev/null |
        openssl x509 -noout -fingerprint -sha256 2>/dev/null | cut -d= -f2
}

# metric NAME [LABEL-FILTER]: the sum over loops.
metric() {
    curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" | grep "^$1{" | grep "${2:-}" |
        awk '{s += $2} END {print s + 0}'
}

# hold_tls NAME CA FLAG SECS: a connection to NAME on PORT (verified against
# CA) that makes one request, writes FLAG, waits for FLAG.go (at most SECS),
# then makes a last request and prints "after-reload N", N the answers it got
# to it. For `exec 5< <(hold_tls ...)`: the test reloads between the two.
hold_tls() {
    python3 - "$PORT" "$2" "$3" "$1" "$4" <<'PY'
import os, socket, ssl, sys, time
port, ca, flag, name, secs = sys.argv[1:]
ctx = ssl.create_default_context(cafile=ca)
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(port)), timeout=20),
                    server_hostname=name)
s.sendall(b"GET / HTTP/1.1\r\nHost: %s\r\n\r\n" % name.encode())
s.recv(65536)
open(flag, "w").write("open\n")
for _ in range(int(secs) * 10):  # bounded: the test says when its reloads are done
    if os.path.exists(flag + ".go"):
        break
    time.sleep(0.1)
s.sendall(b"GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % name.encode())
data = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    data += d
print("after-reload", data.count(b"HTTP/1.1 200 OK"))
PY
}
