#!/usr/bin/env python3
"""A small upstream for the proxy e2e tests: each path is one behaviour
(echo, chunked, close-delimited, slow, cut, die after answering, a large
answer, a slow reader of a large body). It writes
its port to argv[1] and stops by itself after argv[2] seconds. With argv[3],
every byte it receives is appended to that file (to prove what a proxy never
forwarded), the number of connections it accepted is kept in argv[3].conns and
every request it read is one line "METHOD TARGET" of argv[3].requests. With
argv[4], its answers to any path it has no behaviour for say that name.

With UP_TLS_CERT and UP_TLS_KEY in the environment it speaks TLS (Python's
ssl, OpenSSL underneath) on every connection; with argv[3] the name each
client sent as SNI is one line of argv[3].sni ("-" for none), each handshake
one line of argv[3].resumed (1: it resumed a session), and argv[3].tls_fail
counts handshakes that failed."""
import os
import socket
import ssl
import sys
import threading
import time


def read_head(f):
    lines = []
    while True:
        line = f.readline(65537)
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            return lines
        lines.append(line.decode("latin-1").rstrip("\r\n"))


def read_body(f, fields):
    te = fields.get("transfer-encoding", "")
    if "chunked" in te.lower():
        body = b""
        while True:
            size = int(f.readline().split(b";")[0].strip(), 16)
            if size == 0:
                while f.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return body
            body += f.read(size)
            f.readline()
    n = int(fields.get("content-length", "0"))
    return f.read(n) if n else b""


def serve(conn):
    f = conn.makefile("rb")
    doomed = False
    try:
        while True:
            head = read_head(f)
            if not head or doomed:
                return
            method, path, _ = head[0].split(" ", 2)
            fields = {}
            for h in head[1:]:
                k, v = h.split(":", 1)
                fields[k.strip().lower()] = v.strip()
            if path.startswith("/slowread"):
                # Takes a Content-Length body at about 4 MB/s, then says how
                # much came: the proxy must hold the client, not buffer it.
                left, got = int(fields.get("content-length", "0")), 0
                while left:
                    part = f.read(min(left, 65536))
                    if not part:
                        return
                    got += len(part)
                    left -= len(part)
                    time.sleep(0.015)
                msg = b"got=%d" % got
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(msg) + msg)
                continue
            body = read_body(f, fields)
            if RECORD:
                with LOCK, open(RECORD + ".requests", "a") as lf:
                    lf.write("%s %s\n" % (method, path[:200]))
            info = ("names=%s;xff=%s;via=%s;te=%s;len=%d;host=%s;xfp=%s;xfh=%s;fwd=%s" % (
                ",".join(sorted(fields)), fields.get("x-forwarded-for", ""),
                fields.get("via", ""), fields.get("transfer-encoding", ""), len(body),
                fields.get("host", ""), fields.get("x-forwarded-proto", ""),
                fields.get("x-forwarded-host", ""), fields.get("forwarded", "")))
            if path.startswith("/echo"):
                out = (b"HTTP/1.1 200 OK\r\nX-Info: " + info.encode() +
                       b"\r\nContent-Length: %d\r\n\r\n" % len(body))
                conn.sendall(out + (b"" if method == "HEAD" else body))
            elif path.startswith("/chunked"):
                out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                if method != "HEAD":
                    for i in range(50):
                        part = (b"part%02d-" % i) * 100
                        out += b"%x\r\n%s\r\n" % (len(part), part)
                    out += b"0\r\n\r\n"
                conn.sendall(out)
            elif path.startswith("/trailers"):
                # A chunked body and a trailer section: fields that may go on
                # and those that must not (framing, cookies, hop-by-hop).
                out = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                       b"Trailer: X-Checksum\r\n\r\n")
                if method != "HEAD":
                    out += b"5\r\nhello\r\n6\r\n world\r\n0\r\n"
                    out += (b"X-Checksum: sha256=abc\r\nContent-Length: 99\r\n"
                            b"Set-Cookie: a=b\r\nConnection: close\r\n"
                            b"X-Timing: 12ms\r\n\r\n")
                conn.sendall(out)
            elif path.startswith("/eof"):
                conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + b"x" * 30000)
                return
            elif path.startswith("/big/"):
                # /big/N: N MiB, sent as fast as the proxy takes it.
                n = int(path[5:]) << 20
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % n)
                if method != "HEAD":
                    block = b"z" * 65536
                    for _ in range(n // 65536):
                        conn.sendall(block)
            elif path.startswith("/pause"):
                time.sleep(0.5)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
            elif path.startswith("/nocontent"):
                conn.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")
            elif path.startswith("/slow"):
                time.sleep(3)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nslow")
            elif path.startswith("/cut"):
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"y" * 1000)
                return
            elif path.startswith("/die"):
                # Looks keep-alive and stays open while idle (the proxy pools
                # it), then dies on the next request without answering it.
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ndie")
                doomed = True
            elif path.startswith("/badstatus"):
                # Two spaces: llhttp alone would read status 0.
                conn.sendall(b"HTTP/1.1  200 OK\r\nContent-Length: 2\r\n\r\nok")
                return
            elif path.startswith("/idleclose"):
                # Looks keep-alive, then closes the idle connection, as an
                # upstream's keep-alive timeout does.
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nbye")
                time.sleep(0.3)
                return
            else:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (
                    len(NAME) + 1, NAME + b"\n"))
    except (OSError, ValueError):
        pass
    finally:
        # The file object holds the socket open: close both, or no FIN is sent.
        f.close()
        conn.close()


RECORD = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else None
NAME = sys.argv[4].encode() if len(sys.argv) > 4 else b"ok"
LOCK = threading.Lock()


class RecSocket(socket.socket):
    """A socket whose reads are recorded; accept() makes more of them."""

    def accept(self):
        fd, addr = self._accept()
        sock = RecSocket(self.family, self.type, self.proto, fileno=fd)
        sock.setblocking(True)
        return sock, addr

    def recv_into(self, buf, nbytes=0, flags=0):
        n = super().recv_into(buf, nbytes, flags)
        if RECORD and n:
            with LOCK, open(RECORD, "ab") as rf:
                rf.write(bytes(memoryview(buf)[:n]))
        return n


def tls_context():
    cert, key = os.environ.get("UP_TLS_CERT"), os.environ.get("UP_TLS_KEY")
    if not cert or not key:
        return None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)

    def note_sni(sock, name, _ctx):
        if RECORD:
            with LOCK, open(RECORD + ".sni", "a") as sf:
                sf.write((name or "-") + "\n")

    ctx.sni_callback = note_sni
    return ctx


TLS = tls_context()


def serve_tls(conn):
    try:
        conn.settimeout(10)
        tconn = TLS.wrap_socket(conn, server_side=True)
        tconn.settimeout(None)
        if RECORD:
            with LOCK, open(RECORD + ".resumed", "a") as rf:
                rf.write("1\n" if tconn.session_reused else "0\n")
    except (ssl.SSLError, OSError):
        if RECORD:
            with LOCK, open(RECORD + ".tls_fail", "a") as ff:
                ff.write("x\n")
        conn.close()
        return
    serve(tconn)


def main():
    s = RecSocket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # argv[5]: a port to bind again (an upstream that comes back), else any.
    s.bind(("127.0.0.1", int(sys.argv[5]) if len(sys.argv) > 5 else 0))
    s.listen(256)
    # Renamed into place whole: a reader that sees the file sees the port.
    with open(sys.argv[1] + ".tmp", "w") as pf:
        pf.write(str(s.getsockname()[1]))
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    deadline = time.time() + float(sys.argv[2])
    conns_seen = [0]
    s.settimeout(0.5)
    while time.time() < deadline:
        try:
            c, _ = s.accept()
        except socket.timeout:
            continue
        if RECORD:
            with LOCK:
                conns = conns_seen[0] = conns_seen[0] + 1
                with open(RECORD + ".conns", "w") as cf:
                    cf.write(str(conns))
        threading.Thread(target=serve_tls if TLS else serve, args=(c,), daemon=True).start()


main()
