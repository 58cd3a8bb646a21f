#!/usr/bin/env python3
"""Many clients at once for the client_limits e2e test: each client its own
source address in 127.0.0.0/8 (bound before connect) and one keep-alive
HTTP/1.1 connection, GET PATH again and again. Prints one JSON line of facts
that the shell script judges; every wait is bounded.

  burst PORT PATH NADDR SENDS
      Each of NADDR addresses (127.1.x.y) sends SENDS requests one after the
      other. Prints, per status, how many addresses got each count of it:
      {"200": {"3": 1000}, "429": {"1": 1000}}, and the errors.
  rate PORT PATH NADDR SECONDS INTERVAL FLOOD RATE BURST
      Each of NADDR addresses (127.2.x.y) sends a request every INTERVAL
      seconds for SECONDS; with FLOOD > 0, 127.3.0.1 meanwhile sends as fast
      as FLOOD connections can. Prints per address the 200s, the requests
      sent and what a GCRA of RATE per second and BURST (doc/limits.md)
      admits at the instants the client sent them ("gcra"), the same for the
      flood, and the errors. A loaded machine delays and bunches a client's
      requests; the GCRA over its own send times says what the server should
      have admitted of what it was actually sent."""
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
        self.sent_at = []
        self.error = None

    async def one(self, port, path, conn):
        if conn[0] is None:
            conn[0] = await connect(port, self.src)
        self.sent_at.append(time.monotonic())
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


def gcra(times, rate, burst):
    """How many requests sent at these instants the GCRA admits: through
    when TAT - now <= burst * I, then TAT = max(TAT, now) + I."""
    step, tat, ok = 1.0 / rate, float("-inf"), 0
    for t in sorted(times):
        if tat - t <= burst * step + 1e-9:
            ok += 1
            tat = max(tat, t) + step
    return ok


async def rate(port, path, naddr, seconds, interval, flood, per_s, burst):
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
    flood_at = [t for f in floods for t in f.sent_at]
    print(json.dumps({
        "clients": [{"ok": c.counts.get(200, 0), "sent": sum(c.counts.values()),
                     "gcra": gcra(c.sent_at, per_s, burst)} for c in clients],
        "flood_ok": sum(f.counts.get(200, 0) for f in floods),
        "flood_sent": sum(sum(f.counts.values()) for f in floods),
        "flood_gcra": gcra(flood_at, per_s, burst),
        "errors": [c.src + ": " + c.error for c in clients + floods if c.error][:5]}))


def main():
    mode, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if mode == "burst":
        asyncio.run(burst(port, path, int(sys.argv[4]), int(sys.argv[5])))
    elif mode == "rate":
        asyncio.run(rate(port, path, int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6]),
                         int(sys.argv[7]), float(sys.argv[8]), int(sys.argv[9])))
    else:
        sys.exit("usage: client_limits.py burst|rate PORT PATH ...")


if __name__ == "__main__":
    main()
