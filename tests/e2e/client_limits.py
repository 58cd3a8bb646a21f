#!/usr/bin/env python3
"""Many clients at once for the client_limits e2e test: each client its own
source address in 127.0.0.0/8 (bound before connect) and one keep-alive
HTTP/1.1 connection, GET PATH again and again. Prints one JSON line of facts
that the shell script judges; every wait is bounded.

  burst PORT PATH NADDR SENDS
      Each of NADDR addresses (127.1.x.y) sends SENDS requests one after the
      other. Prints, per status, how many addresses got each count of it:
      {"200": {"3": 1000}, "429": {"1": 1000}}, and the errors.
  rate PORT PATH NADDR SECONDS INTERVAL [FLOOD]
      Each of NADDR addresses (127.2.x.y) sends a request every INTERVAL
      seconds for SECONDS; with FLOOD, 127.3.0.1 meanwhile sends as fast as
      FLOOD connections can. Prints per address the 200s and the span between
      its first and last request (seconds), the flood's 200s and total, and
      the errors."""
import asyncio
import json
import socket
import sys
import time


def addr(net, i):
    return "127.%d.%d.%d" % (net, i // 250, i % 250 + 1)


async def connect(port, src):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    s.bind((src, 0))
    await asyncio.wait_for(asyncio.get_running_loop().sock_connect(s, ("127.0.0.1", port)), 20)
    return await asyncio.open_connection(sock=s)


async def get(reader, writer, path):
    """One GET on the connection: its status (the body is read by its length)."""
    writer.write(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: limits\r\n\r\n")
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 20)
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    length = 0
    for line in lines[1:]:
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    if length:
        await asyncio.wait_for(reader.readexactly(length), 20)
    return status


class Client:
    def __init__(self, src):
        self.src = src
        self.counts = {}
        self.first = self.last = None
        self.error = None

    async def one(self, port, path, conn):
        if conn[0] is None:
            conn[0] = await connect(port, self.src)
        now = time.monotonic()
        if self.first is None:
            self.first = now
        self.last = now
        st = await get(conn[0][0], conn[0][1], path)
        self.counts[st] = self.counts.get(st, 0) + 1


async def burst(port, path, naddr, sends):
    sem = asyncio.Semaphore(200)  # connections open at once

    async def run(c):
        async with sem:
            conn = [None]
            try:
                for _ in range(sends):
                    await c.one(port, path, conn)
            except Exception as e:  # judged by the script: any error fails it
                c.error = repr(e)
            if conn[0]:
                conn[0][1].close()

    clients = [Client(addr(1, i)) for i in range(naddr)]
    await asyncio.gather(*(run(c) for c in clients))
    out = {"errors": [c.src + ": " + c.error for c in clients if c.error][:5]}
    for c in clients:
        for st, n in c.counts.items():
            per = out.setdefault(str(st), {})
            per[str(n)] = per.get(str(n), 0) + 1
    print(json.dumps(out))


async def rate(port, path, naddr, seconds, interval, flood):
    end = time.monotonic() + seconds

    async def paced(c, start):
        conn = [None]
        await asyncio.sleep(start)
        nxt = time.monotonic()
        try:
            while time.monotonic() < end:
                await c.one(port, path, conn)
                nxt += interval
                await asyncio.sleep(max(0.0, nxt - time.monotonic()))
        except Exception as e:
            c.error = repr(e)
        if conn[0]:
            conn[0][1].close()

    async def flooding(c):
        conn = [None]
        try:
            while time.monotonic() < end:
                await c.one(port, path, conn)
        except Exception as e:
            c.error = repr(e)
        if conn[0]:
            conn[0][1].close()

    clients = [Client(addr(2, i)) for i in range(naddr)]
    floods = [Client("127.3.0.1") for _ in range(flood)]
    # The clients start spread over one interval, so that the load is even.
    await asyncio.gather(*(paced(c, interval * i / naddr) for i, c in enumerate(clients)),
                         *(flooding(f) for f in floods))
    print(json.dumps({
        "clients": [{"ok": c.counts.get(200, 0), "span": (c.last or 0) - (c.first or 0),
                     "sent": sum(c.counts.values())} for c in clients],
        "flood_ok": sum(f.counts.get(200, 0) for f in floods),
        "flood_sent": sum(sum(f.counts.values()) for f in floods),
        "flood_span": max([(f.last or 0) - (f.first or 0) for f in floods] or [0]),
        "errors": [c.src + ": " + c.error for c in clients + floods if c.error][:5]}))


def main():
    mode, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if mode == "burst":
        asyncio.run(burst(port, path, int(sys.argv[4]), int(sys.argv[5])))
    elif mode == "rate":
        flood = int(sys.argv[7]) if len(sys.argv) > 7 else 0
        asyncio.run(rate(port, path, int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6]),
                         flood))
    else:
        sys.exit("usage: client_limits.py burst|rate PORT PATH ...")


if __name__ == "__main__":
    main()
