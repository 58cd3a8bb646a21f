#!/usr/bin/env python3
"""Mixed HTTP/1.1 load that counts its own failures (e2e restart_keepalive,
scripts/bench-restart): keep-alive clients, Connection: close clients and
16-deep pipelining clients at once, until a stop file exists or a time bound.

A keep-alive connection the server closes is reconnected only when the last
answer said Connection: close; a close, reset or EOF without that is a failed
request (no silent retry: that is what issue 23 is about). A pipeline's
requests after an answer with Connection: close were never answered and are
sent again on a new connection, as RFC 9112 9.3.2 has clients do: counted as
"resent", not failed. Connect errors are counted apart.

Prints one JSON line: ok, failed, resets, connect_errors, resent and, with
--latency FILE, writes "end_time_s latency_ms" per request to FILE.

A request not answered within --timeout seconds (default 5) is failed.

Usage: mixed_load.py HOST PORT --stop FILE --seconds N [--ka N] [--close N]
       [--pipe N] [--depth 16] [--latency FILE] [--expect-body TEXT] [--timeout S]
"""
import argparse
import errno
import json
import os
import socket
import sys
import threading
import time

ap = argparse.ArgumentParser()
ap.add_argument("host")
ap.add_argument("port", type=int)
ap.add_argument("--stop", required=True)
ap.add_argument("--seconds", type=float, required=True)
ap.add_argument("--ka", type=int, default=4)
ap.add_argument("--close", type=int, default=4)
ap.add_argument("--pipe", type=int, default=2)
ap.add_argument("--depth", type=int, default=16)
ap.add_argument("--latency")
ap.add_argument("--expect-body", default="")
ap.add_argument("--timeout", type=float, default=5.0)
a = ap.parse_args()

end = time.monotonic() + a.seconds
lock = threading.Lock()
tot = {"ok": 0, "failed": 0, "resets": 0, "connect_errors": 0, "resent": 0}
shown = [0]
lat = [] if a.latency else None
REQ = b"GET / HTTP/1.1\r\nHost: t\r\n\r\n"
REQ_CLOSE = b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
BODY = a.expect_body.encode()


def going():
    return time.monotonic() < end and not os.path.exists(a.stop)


def add(k, n=1, why=None):
    with lock:
        tot[k] += n
        if why and shown[0] < 8:
            shown[0] += 1
            print("%s at %.3f: %s" % (k, time.time(), why), file=sys.stderr)


class Reset(Exception):
    pass


class Closed(Exception):
    pass


class Conn:
    def __init__(self):
        try:
            self.s = socket.create_connection((a.host, a.port), timeout=a.timeout)
        except OSError as e:
            raise ConnectionError(e)
        self.buf = b""

    def send(self, data):
        try:
            self.s.sendall(data)
        except (BrokenPipeError, ConnectionResetError) as e:
            raise Reset(e)

    def fill(self):
        try:
            b = self.s.recv(65536)
        except ConnectionResetError as e:
            raise Reset(e)
        except socket.timeout:
            raise RuntimeError("timeout")
        if not b:
            raise Closed()
        self.buf += b

    def response(self):
        """One answer: (status, keep). Closed only before its first byte."""
        while b"\r\n\r\n" not in self.buf:
            had = len(self.buf)
            try:
                self.fill()
            except Closed:
                if had:
                    raise RuntimeError("answer cut short")
                raise
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split()[1])
        n, keep = 0, True
        for line in lines[1:]:
            k, _, v = line.partition(b":")
            k = k.strip().lower()
            if k == b"content-length":
                n = int(v)
            elif k == b"connection" and b"close" in v.lower():
                keep = False
        while len(rest) < n:
            try:
                self.fill()
            except Closed:
                raise RuntimeError("body cut short")
            head, _, rest = self.buf.partition(b"\r\n\r\n")
        body, self.buf = rest[:n], rest[n:]
        if status != 200 or (BODY and not body.startswith(BODY)):
            raise RuntimeError("answer %d %r" % (status, body[:40]))
        return keep

    def close(self):
        self.s.close()


def record(t0):
    if lat is not None:
        t = time.monotonic()
        with lock:
            lat.append((time.time(), (t - t0) * 1000.0))


def guarded(fn):
    def run():
        while going():
            try:
                fn()
            except ConnectionError as e:
                add("connect_errors", why="connect: %r" % e)
                time.sleep(0.01)
    return run


def one_close():
    c = Conn()
    try:
        t0 = time.monotonic()
        c.send(REQ_CLOSE)
        c.response()
        record(t0)
        add("ok")
    except Reset as e:
        add("resets", why="close client: %r" % e)
    except (Closed, RuntimeError, OSError) as e:
        add("failed", why="close client: %r" % e)
    finally:
        c.close()


def keepalive():
    c = Conn()
    try:
        while going():
            t0 = time.monotonic()
            c.send(REQ)
            keep = c.response()
            record(t0)
            add("ok")
            if not keep:
                return
    except Reset as e:
        add("resets", why="keep-alive client: %r" % e)
    except Closed:
        add("failed", why="keep-alive connection closed under a request")
    except (RuntimeError, OSError) as e:
        add("failed", why="keep-alive client: %r" % e)
    finally:
        c.close()


def pipeline():
    """Batches of depth requests on one connection, the next batch once the
    last answer came; a new connection only after Connection: close."""
    c = Conn()
    todo = a.depth
    try:
        while todo and going():
            t0 = time.monotonic()
            c.send(REQ * todo)
            keep = True
            while todo and keep:
                keep = c.response()
                record(t0)
                add("ok")
                todo -= 1
            if todo:
                add("resent", todo)  # after Connection: close: never answered
            else:
                todo = a.depth
            if not keep:
                c.close()
                c = Conn()
    except Reset as e:
        add("resets", todo, why="pipeline client: %r" % e)
    except Closed:
        add("failed", todo, why="pipelined connection closed with %d unanswered" % todo)
    except (RuntimeError, OSError) as e:
        add("failed", todo, why="pipeline client: %r" % e)
    finally:
        c.close()


threads = ([threading.Thread(target=guarded(keepalive)) for _ in range(a.ka)] +
           [threading.Thread(target=guarded(one_close)) for _ in range(a.close)] +
           [threading.Thread(target=guarded(pipeline)) for _ in range(a.pipe)])
for t in threads:
    t.start()
for t in threads:
    t.join()
if lat is not None:
    with open(a.latency, "w") as f:
        for t, ms in lat:
            f.write("%.6f %.3f\n" % (t, ms))
print(json.dumps(tot))
sys.exit(0)
