#!/usr/bin/env bash
# Expect: 100-continue in the respond scenario (RFC 9110 10.1.1): with only the
# head sent, "HTTP/1.1 100 Continue" comes at once, and the final answer once
# the body follows; a Content-Length past body_size gets 413 at once; HTTP/1.0
# gets no 100. The client never sends the body before it is told to, so a
# server that waits for it fails here (bounded by the 10 s read guard).
. "$(dirname "$0")/lib.sh"
start_sws '[limits]\nbody_size = 1k'

python3 - "$PORT" <<'PY' || fail "expect: see above"
import socket, sys
port = int(sys.argv[1])

def conn():
    return socket.create_connection(("127.0.0.1", port), timeout=10)

def read_until(s, marker):
    data = b""
    while marker not in data:
        try:
            b = s.recv(4096)
        except socket.timeout:
            sys.exit("no %r within 10 s; got %r" % (marker, data))
        if not b:
            break
        data += b
    return data

CONT = b"HTTP/1.1 100 Continue\r\n\r\n"
head = b"POST /up HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"
s = conn()
s.sendall(head)
got = read_until(s, b"\r\n\r\n")
if not got.startswith(CONT):
    sys.exit("want 100 Continue before the body, got %r" % got[:80])
s.sendall(b"hello")
got = got[len(CONT):] + read_until(s, b"Hello from scalwsd")
if not got.startswith(b"HTTP/1.1 200"):
    sys.exit("want 200 after the body, got %r" % got[:80])
# Keep-alive goes on: a second request on the same connection owes its own 100.
s.sendall(head)
got = read_until(s, b"\r\n\r\n")
if not got.startswith(CONT):
    sys.exit("second request: want 100, got %r" % got[:80])
s.close()

# Chunked: the same.
s = conn()
s.sendall(b"POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n")
got = read_until(s, b"\r\n\r\n")
if not got.startswith(CONT):
    sys.exit("chunked: want 100, got %r" % got[:80])
s.sendall(b"3;a=1;b=\"x\\\"y\"\r\nabc\r\n0\r\n\r\n")
got = read_until(s, b"Hello from scalwsd")
if b"HTTP/1.1 200" not in got:
    sys.exit("chunked: want 200, got %r" % got[:120])
s.close()

# Too large: the final status at once, the body never sent.
s = conn()
s.sendall(b"POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n")
got = read_until(s, b"\r\n\r\n")
if not got.startswith(b"HTTP/1.1 413"):
    sys.exit("oversized: want 413 at once, got %r" % got[:80])
s.close()

# HTTP/1.0: no 100 (RFC 9110 15.2); the answer comes with the body.
s = conn()
s.sendall(b"POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
s.settimeout(0.5)
try:
    early = s.recv(4096)
except socket.timeout:
    early = b""
if early:
    sys.exit("HTTP/1.0: nothing before the body, got %r" % early[:80])
s.settimeout(10)
s.sendall(b"ok")
got = read_until(s, b"Hello from scalwsd")
if not got.startswith(b"HTTP/1.1 200"):
    sys.exit("HTTP/1.0: want 200, got %r" % got[:80])
print("expect: ok")
PY
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"
echo ok
