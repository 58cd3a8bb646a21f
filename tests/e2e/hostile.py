#!/usr/bin/env python3
"""Hostile clients for the hostile_*.sh e2e tests: each mode attacks scalwsd on
127.0.0.1:PORT while probing that ordinary requests keep being answered, samples
the server's VmRSS from /proc/PID/status, and prints one JSON line of facts that
the shell script judges. Every loop is bounded in time.

usage: hostile.py MODE PORT PID [args]
  slowloris N SECS       N connections, one header byte each per 200 ms
  slowbody N SECS        N connections: a whole head, then a body byte per 200 ms
  nonreading N SECS      N connections pipelining requests and never reading
  flood MBYTES           one connection sends MBYTES of pipelined GETs while reading
"""
import json
import os
import socket
import sys
import threading
import time

PORT = int(sys.argv[2])
PID = int(sys.argv[3])


def rss_kib():
    with open(f"/proc/{PID}/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1])
    return 0


class Prober(threading.Thread):
    """One ordinary request on a fresh connection every 100 ms, each with a 5 s
    budget; records failures and the slowest answer. Once told to stop it still
    makes up MIN probes in all (30 s at most): the tests ask for 10, and on a
    loaded machine an attack that ends in 3 s left room for only 8."""

    MIN = 10

    def __init__(self):
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.ok = 0
        self.failed = []
        self.slowest = 0.0
        self.rss_max = rss_kib()

    def one(self):
        t0 = time.monotonic()
        s = socket.create_connection(("127.0.0.1", PORT), timeout=5)
        try:
            s.sendall(b"GET /probe HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
            got = b""
            while True:
                b = s.recv(4096)
                if not b:
                    break
                got += b
        finally:
            s.close()
        if not got.startswith(b"HTTP/1.1 200"):
            raise RuntimeError("answer %r" % got[:40])
        return time.monotonic() - t0

    def run(self):
        until = None
        while True:
            if self.stop.is_set():
                until = until or time.monotonic() + 30
                if self.ok + len(self.failed) >= self.MIN or time.monotonic() > until:
                    break
            try:
                self.slowest = max(self.slowest, self.one())
                self.ok += 1
            except Exception as e:  # noqa: BLE001 - any failure is a fact to report
                self.failed.append(str(e))
            self.rss_max = max(self.rss_max, rss_kib())
            self.stop.wait(0.1)

    def facts(self):
        return {"probes_ok": self.ok, "probes_failed": len(self.failed),
                "probe_errors": self.failed[:3], "probe_slowest_s": round(self.slowest, 3)}


def trickle(n, secs, head, slow):
    """n connections send head at once, then slow one byte per 200 ms; returns, per
    connection, when (seconds after its connect) the server answered or closed,
    and what it answered first."""
    conns = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", PORT))
        s.setblocking(False)
        conns.append({"s": s, "t0": time.monotonic(), "sent": 0, "end": None, "answer": b""})
    data = head + slow
    end = time.monotonic() + secs
    while time.monotonic() < end and any(c["end"] is None for c in conns):
        for c in conns:
            if c["end"] is not None:
                continue
            try:
                b = c["s"].recv(4096)
                c["answer"] += b
                if not b or c["answer"].count(b"\r\n\r\n"):
                    c["end"] = time.monotonic() - c["t0"]
                    continue
            except BlockingIOError:
                pass
            except OSError:
                c["end"] = time.monotonic() - c["t0"]
                continue
            # The head goes in one piece (slow body) or byte by byte (slowloris).
            k = len(head) if c["sent"] == 0 and head else 1
            try:
                c["sent"] += c["s"].send(data[c["sent"]:c["sent"] + k])
            except BlockingIOError:
                pass
            except OSError:
                c["end"] = time.monotonic() - c["t0"]
        time.sleep(0.2)
    ends = [c["end"] for c in conns]
    answers = [c["answer"].split(b"\r\n", 1)[0].decode("latin-1") for c in conns]
    for c in conns:
        c["s"].close()
    cut = [e for e in ends if e is not None]
    return {"connections": n, "cut": len(cut),
            "cut_first_s": round(min(cut), 2) if cut else None,
            "cut_last_s": round(max(cut), 2) if cut else None,
            "answered_408": sum(1 for a in answers if a.startswith("HTTP/1.1 408")),
            "first_answers": sorted(set(answers))[:4],
            "bytes_sent_max": max(c["sent"] for c in conns)}


def nonreading(n, secs):
    """n connections with a small receive buffer pipeline requests as fast as
    the server takes them and never read; reports how much each got in, when
    each was reset by the server (seconds after it stopped taking input)."""
    req = b"GET /nr HTTP/1.1\r\nHost: a\r\nX-Pad: " + b"p" * 200 + b"\r\n\r\n"
    blob = memoryview(req * 4096)  # ~930 KB per send attempt, never copied
    conns = []
    for _ in range(n):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", PORT))
        s.setblocking(False)
        conns.append({"s": s, "sent": 0, "last_progress": time.monotonic(), "reset_after": None})
    limit = 256 << 20  # an unbounded server would take it all: far more than its ceiling
    end = time.monotonic() + secs
    rss_max = rss_kib()
    while time.monotonic() < end and any(c["reset_after"] is None for c in conns):
        for c in conns:
            if c["reset_after"] is not None or c["sent"] >= limit:
                continue
            try:
                off = c["sent"] % len(blob)
                k = c["s"].send(blob[off:])
                if k > 0:
                    c["sent"] += k
                    c["last_progress"] = time.monotonic()
            except BlockingIOError:
                pass
            except OSError:
                c["reset_after"] = time.monotonic() - c["last_progress"]
        rss_max = max(rss_max, rss_kib())
        time.sleep(0.05)
    for c in conns:
        c["s"].close()
    resets = [c["reset_after"] for c in conns if c["reset_after"] is not None]
    return {"connections": n, "reset": len(resets),
            "reset_after_stall_max_s": round(max(resets), 2) if resets else None,
            "sent_max_bytes": max(c["sent"] for c in conns), "rss_max_kib": rss_max}


def flood(mbytes):
    """One connection: a sender thread writes mbytes of pipelined GETs (the last
    one asks to close) while this thread reads and counts the answers."""
    req = b"GET /flood HTTP/1.1\r\nHost: a\r\nX-Pad: " + b"f" * 440 + b"\r\n\r\n"
    last = b"GET /last HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
    nreq = (mbytes << 20) // len(req)
    s = socket.create_connection(("127.0.0.1", PORT))
    s.settimeout(30)
    err = []

    def send():
        try:
            chunk = req * 256
            left = nreq
            while left:
                k = min(left, 256)
                s.sendall(chunk if k == 256 else req * k)
                left -= k
            s.sendall(last)
        except OSError as e:
            err.append(str(e))

    t = threading.Thread(target=send, daemon=True)
    t0 = time.monotonic()
    t.start()
    mark = b"HTTP/1.1 200 "
    count, tail, total, rss_max, last_sample = 0, b"", 0, rss_kib(), 0.0
    try:
        while True:
            b = s.recv(1 << 16)
            if not b:
                break
            total += len(b)
            buf = tail + b
            count += buf.count(mark)
            # Keep a tail shorter than the mark: a mark split across reads is counted once.
            tail = buf[-(len(mark) - 1):]
            now = time.monotonic()
            if now - last_sample > 0.05:
                rss_max = max(rss_max, rss_kib())
                last_sample = now
    except OSError as e:
        err.append(str(e))
    t.join(5)
    s.close()
    return {"requests_sent": nreq + 1, "answers": count, "bytes_received": total,
            "seconds": round(time.monotonic() - t0, 2), "rss_max_kib": rss_max, "errors": err}


def main():
    mode = sys.argv[1]
    rss_before = rss_kib()
    prober = Prober()
    if mode != "flood":
        prober.start()
    if mode == "slowloris":
        slow = b"GET / HTTP/1.1\r\nHost: a\r\nX-Pad: " + b"a" * 1000
        out = trickle(int(sys.argv[4]), float(sys.argv[5]), b"", slow)
    elif mode == "slowbody":
        head = b"POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 60\r\n\r\n"
        out = trickle(int(sys.argv[4]), float(sys.argv[5]), head, b"b" * 60)
    elif mode == "nonreading":
        out = nonreading(int(sys.argv[4]), float(sys.argv[5]))
    elif mode == "flood":
        out = flood(int(sys.argv[4]))
    else:
        sys.exit("unknown mode " + mode)
    if mode != "flood":
        prober.stop.set()
        prober.join(40)
        out.update(prober.facts())
        out["rss_max_kib"] = max(out.get("rss_max_kib", 0), prober.rss_max)
    out["rss_before_kib"] = rss_before
    out["rss_growth_kib"] = out["rss_max_kib"] - rss_before
    print(json.dumps(out))


if __name__ == "__main__":
    main()
