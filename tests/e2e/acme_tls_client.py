#!/usr/bin/env python3
"""A TLS keep-alive client for acme_pebble.sh: trusts only Pebble's root,
checks that one open connection survives a certificate renewal.

  acme_tls_client.py ROOT HOST PORT ADMIN_PORT SECONDS
Opens a connection, GETs /, remembers its certificate's fingerprint and the
installed count, waits (bounded) until /metrics counts another install, GETs
/ again on the same connection, then opens a new connection. Prints
"old=<fp> new=<fp>"; exits non-zero on any failure."""
import hashlib
import socket
import ssl
import sys
import time
import urllib.request

root, host, port, admin, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])


def installed():
    text = urllib.request.urlopen(f"http://127.0.0.1:{admin}/metrics", timeout=5).read().decode()
    for line in text.splitlines():
        if line.startswith("scalwsd_acme_installed_total "):
            return int(line.split()[1])
    raise SystemExit("no scalwsd_acme_installed_total in /metrics")


def connect():
    ctx = ssl.create_default_context(cafile=root)
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    return ctx.wrap_socket(s, server_hostname=host)


def get(conn):
    conn.sendall(f"GET / HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    data = b""
    while b"Hello from scalwsd\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            raise SystemExit(f"connection closed after {data!r}")
        data += chunk
    if not data.startswith(b"HTTP/1.1 200"):
        raise SystemExit(f"bad answer {data!r}")


def fp(conn):
    return hashlib.sha256(conn.getpeercert(binary_form=True)).hexdigest()[:16]


conn = connect()
n0 = installed()
get(conn)
old = fp(conn)
deadline = time.time() + secs
while installed() <= n0:
    if time.time() > deadline:
        raise SystemExit(f"no renewal installed within {secs} s")
    time.sleep(0.2)
get(conn)  # the connection opened before the renewal still answers
conn.close()
# Each loop switches to the new context within its next turn: a new
# connection gets the new certificate within a moment (bounded).
for _ in range(25):
    conn2 = connect()
    get(conn2)
    new = fp(conn2)
    conn2.close()
    if new != old:
        break
    time.sleep(0.2)
print(f"old={old} new={new}")
