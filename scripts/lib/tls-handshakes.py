#!/usr/bin/env python3
"""Full TLS handshakes with a server name (SNI), one after another, for
scripts/bench-tls-vs-nginx --names (openssl s_time sends no SNI): each a new
connection, a new session (none is reused), GET / over HTTP/1.0 read to the
end. Names cycle n1.test .. nN.test from an offset, so parallel clients ask
different ones.
   tls-handshakes.py PORT SECONDS N OFFSET   -> prints the count done"""
import socket
import ssl
import sys
import time

port, secs, n, offset = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
end = time.monotonic() + secs
count = 0
i = offset
while time.monotonic() < end:
    name = "n%d.test" % (i % n + 1)
    i += 1
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname=name) as s:
            s.sendall(b"GET / HTTP/1.0\r\n\r\n")
            while s.recv(65536):
                pass
    count += 1
print(count)
