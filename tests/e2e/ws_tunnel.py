#!/usr/bin/env python3
"""WebSocket peers for tests/e2e/proxy_websocket.sh (Debian python3-websockets).

  ws_tunnel.py server PORTFILE SECONDS DIR [CERT KEY]
      A WebSocket server (TLS with CERT and KEY) on a free port, written to
      PORTFILE, living at most SECONDS. Paths: /echo echoes every message;
      /big?N sends N bytes as one message, then echoes; /vanish drops its TCP
      connection (no close frame) after the first message; /bye echoes the
      first message, then closes (code 4000); /watch notes in
      DIR/watch.closed that its client went. Plain HTTP (no upgrade): /plain
      answers 200 "plain ok", anything else 403.
  ws_tunnel.py liar PORTFILE SECONDS
      An upstream that answers 101 to every request, asked for or not; after
      GET /half it reads to the client's FIN, answers "got N" and closes.
  ws_tunnel.py client URL CASE [ARGS]
      One client case against the proxy; exit 0 when it held, else a reason.

Every wait is bounded; nothing here sleeps for a fixed time to pass a test."""
import asyncio
import http
import os
import resource
import socket
import ssl
import sys
import time

import websockets

T_OUT = 30


def write_port(path, port):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"listen 127.0.0.1:{port}\n")
    os.rename(tmp, path)


# ---- the upstream ---------------------------------------------------------------


async def serve(portfile, seconds, d, cert=None, key=None):
    ctx = None
    if cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)

    async def plain(path, headers):
        ws_path = path in ("/echo", "/vanish", "/watch", "/bye") or path.startswith("/big?")
        if headers.get("Upgrade") and ws_path:
            return None
        if path == "/plain":
            return http.HTTPStatus.OK, [("Content-Type", "text/plain")], b"plain ok"
        return http.HTTPStatus.FORBIDDEN, [("Content-Type", "text/plain")], b"refused"

    async def handler(ws, path):
        if path.startswith("/big"):
            n = int(path.split("?", 1)[1])
            await ws.send(bytes(i % 251 for i in range(256)) * (n // 256))
        if path == "/vanish":
            await ws.recv()
            ws.transport.abort()
            return
        if path == "/bye":
            await ws.send(await ws.recv())
            await ws.close(4000, "bye")
            return
        if path == "/watch":
            try:
                async for _ in ws:
                    pass
            finally:
                with open(os.path.join(d, "watch.closed"), "a") as f:
                    f.write("closed\n")
            return
        async for m in ws:
            await ws.send(m)

    async with websockets.serve(
        handler, "127.0.0.1", 0, ssl=ctx, process_request=plain, max_size=None,
        ping_interval=None, close_timeout=5
    ) as srv:
        write_port(portfile, srv.sockets[0].getsockname()[1])
        await asyncio.sleep(seconds)


async def liar(portfile, seconds):
    async def conn(r, w):
        try:
            head = await r.readuntil(b"\r\n\r\n")
            w.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                    b"Connection: upgrade\r\n\r\n")
            await w.drain()
            if head.startswith(b"GET /half "):
                # Half-close: everything until the client's FIN (passed on by
                # the proxy), then how much came, then our FIN.
                n = len(await asyncio.wait_for(r.read(), 30))
                w.write(f"got {n}".encode())
                await w.drain()
            else:
                await asyncio.wait_for(r.read(1), 10)
        except Exception:
            pass
        w.close()

    srv = await asyncio.start_server(conn, "127.0.0.1", 0)
    write_port(portfile, srv.sockets[0].getsockname()[1])
    await asyncio.sleep(seconds)


# ---- clients -------------------------------------------------------------------------


def client_ctx(url):
    if not url.startswith("wss:"):
        return None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def connect(url, **kw):
    return websockets.connect(url, ssl=client_ctx(url), max_size=None, ping_interval=None,
                              open_timeout=T_OUT, close_timeout=T_OUT, **kw)


async def case_echo(url):
    async with connect(url + "/echo") as ws:
        for m in ["hello", "ünïcödé " * 100, b"\x00\x01\xff" * 1000, b""]:
            await ws.send(m)
            got = await asyncio.wait_for(ws.recv(), T_OUT)
            assert got == m and type(got) is type(m), f"echo of {m[:20]!r}: {got[:20]!r}"
        # ping/pong through the tunnel
        pong = await ws.ping(b"are you there")
        await asyncio.wait_for(pong, T_OUT)
        # the close handshake: our code comes back in the server's close frame
        await ws.close(code=4001, reason="bye")
        assert ws.close_code == 4001, f"close code {ws.close_code}"
        assert ws.close_reason == "bye", f"close reason {ws.close_reason!r}"


async def case_large(url, size):
    size = int(size)
    async with connect(url + "/echo") as ws:
        msg = os.urandom(size)
        await ws.send(msg)
        got = await asyncio.wait_for(ws.recv(), 120)
        assert got == msg, f"large echo: {len(got)} bytes back of {size}"
        await ws.close()


async def case_vanish(url):
    async with connect(url + "/vanish") as ws:
        await ws.send("x")
        try:
            await asyncio.wait_for(ws.recv(), T_OUT)
        except websockets.ConnectionClosed as e:
            assert e.rcvd is None, f"a close frame came: {e.rcvd}"
            return
        raise AssertionError("a message came from a vanished upstream")


async def case_idle(url):
    async with connect(url + "/echo") as ws:
        await ws.send("x")
        await ws.recv()
        t0 = time.monotonic()
        try:
            await asyncio.wait_for(ws.recv(), T_OUT)
        except websockets.ConnectionClosed:
            print(f"closed after {time.monotonic() - t0:.1f} s")
            return
        raise AssertionError("a message came on an idle tunnel")


async def case_many(url, n, holdfile):
    n = int(n)
    # Opened 100 at a time: a thousand handshakes at once would overrun the
    # listener's backlog, and the SYN retries cost seconds, not the proxy.
    gate = asyncio.Semaphore(100)

    async def one():
        async with gate:
            return await connect(url + "/echo")

    conns = await asyncio.gather(*[one() for _ in range(n)])
    for i, ws in enumerate(conns):
        await ws.send(f"m{i}")
    for i, ws in enumerate(conns):
        got = await asyncio.wait_for(ws.recv(), T_OUT)
        assert got == f"m{i}", f"tunnel {i} got {got!r}"
    with open(holdfile, "w") as f:
        f.write("open\n")
    # held open until the test has read the gauge (it removes the file)
    end = time.monotonic() + T_OUT
    while os.path.exists(holdfile) and time.monotonic() < end:
        await asyncio.sleep(0.05)
    for i, ws in enumerate(conns):  # all still work
        await ws.send(f"again{i}")
        assert await asyncio.wait_for(ws.recv(), T_OUT) == f"again{i}"
    await asyncio.gather(*[ws.close() for ws in conns])


async def case_drain(url, flagfile):
    """Open, tell the test (flagfile), echo on during the drain, then see
    the close the drain timeout makes."""
    async with connect(url + "/echo") as ws:
        await ws.send("before")
        assert await ws.recv() == "before"
        with open(flagfile, "w") as f:
            f.write("open\n")
        end = time.monotonic() + T_OUT
        while not os.path.exists(flagfile + ".draining") and time.monotonic() < end:
            await asyncio.sleep(0.05)
        await ws.send("during")
        assert await asyncio.wait_for(ws.recv(), T_OUT) == "during", "no echo while draining"
        try:
            await asyncio.wait_for(ws.recv(), T_OUT)
        except websockets.ConnectionClosed:
            return
        raise AssertionError("the tunnel outlived the drain timeout")


async def case_hold(url, flagfile):
    """Open, tell the test (flagfile), wait for flagfile.go (a reload), then
    echo again and close: the tunnel outlives what happened meanwhile."""
    async with connect(url + "/echo") as ws:
        await ws.send("before")
        assert await ws.recv() == "before"
        with open(flagfile, "w") as f:
            f.write("open\n")
        end = time.monotonic() + T_OUT
        while not os.path.exists(flagfile + ".go") and time.monotonic() < end:
            await asyncio.sleep(0.05)
        await ws.send("after")
        assert await asyncio.wait_for(ws.recv(), T_OUT) == "after", "no echo after"
        await ws.close(code=1000)


async def case_client_vanish(url):
    ws = await connect(url + "/watch")
    await ws.send("x")
    ws.transport.abort()


# ---- raw sockets: what a library hides --------------------------------------------


def raw_conn(url):
    tls = url.startswith("wss:")
    hostport = url.split("//", 1)[1]
    host, port = hostport.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=T_OUT)
    if tls:
        s = client_ctx(url).wrap_socket(s)
    return s


def read_head(s, buf=b""):
    while b"\r\n\r\n" not in buf:
        d = s.recv(65536)
        if not d:
            raise AssertionError(f"closed before a head: {buf!r}")
        buf += d
    head, rest = buf.split(b"\r\n\r\n", 1)
    return head.decode("latin-1"), rest


def read_answer(s):
    head, rest = read_head(s)
    n = 0
    for line in head.split("\r\n")[1:]:
        k, v = line.split(":", 1)
        if k.strip().lower() == "content-length":
            n = int(v)
    while len(rest) < n:
        d = s.recv(65536)
        assert d, "closed in a body"
        rest += d
    return head, rest[:n], rest[n:]


def upgrade_req(path, key=b"dGhlIHNhbXBsZSBub25jZQ=="):
    return (f"GET {path} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key.decode()}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode()


def frame(payload, op=0x2):
    mask = os.urandom(4)
    n = len(payload)
    h = bytes([0x80 | op])
    if n < 126:
        h += bytes([0x80 | n])
    elif n < 65536:
        h += bytes([0x80 | 126]) + n.to_bytes(2, "big")
    else:
        h += bytes([0x80 | 127]) + n.to_bytes(8, "big")
    return h + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def read_frame(s, buf):
    def need(k):
        nonlocal buf
        while len(buf) < k:
            d = s.recv(65536)
            assert d, "closed in a frame"
            buf += d

    need(2)
    n = buf[1] & 0x7F
    off = 2
    if n == 126:
        need(4)
        n, off = int.from_bytes(buf[2:4], "big"), 4
    elif n == 127:
        need(10)
        n, off = int.from_bytes(buf[2:10], "big"), 10
    need(off + n)
    return buf[0] & 0x0F, buf[off:off + n], buf[off + n:]


def case_plain_then_upgrade(url):
    """A plain request, then an upgrade, on one connection."""
    s = raw_conn(url)
    s.sendall(b"GET /plain HTTP/1.1\r\nHost: x\r\n\r\n")
    head, body, rest = read_answer(s)
    assert head.startswith("HTTP/1.1 200") and body == b"plain ok", f"plain: {head} {body!r}"
    s.sendall(upgrade_req("/echo"))
    head, rest = read_head(s, rest)
    assert head.startswith("HTTP/1.1 101"), f"upgrade: {head}"
    low = head.lower()
    assert "upgrade: websocket" in low and "connection: upgrade" in low, head
    assert "sec-websocket-accept: s3pplmbitxaq9kygzzhzrbk+xoo=" in low, head
    s.sendall(frame(b"through"))
    op, payload, rest = read_frame(s, rest)
    assert op == 0x2 and payload == b"through", f"frame {op} {payload!r}"
    s.close()


def case_refused(url):
    """An upgrade the upstream refuses (403) is relayed; the connection goes on."""
    s = raw_conn(url)
    s.sendall(upgrade_req("/nope"))
    head, body, rest = read_answer(s)
    assert head.startswith("HTTP/1.1 403"), f"refused upgrade: {head}"
    assert "connection: close" not in head.lower(), head
    s.sendall(b"GET /plain HTTP/1.1\r\nHost: x\r\n\r\n")
    head, body, rest = read_answer(s)
    assert head.startswith("HTTP/1.1 200") and body == b"plain ok", f"after: {head} {body!r}"
    s.close()


def case_half_close(url):
    """Our FIN reaches the upstream, which still answers, then its FIN reaches us."""
    s = raw_conn(url)
    s.sendall(upgrade_req("/half"))
    head, rest = read_head(s)
    assert head.startswith("HTTP/1.1 101"), head
    s.sendall(b"x" * 100000)
    s.shutdown(socket.SHUT_WR)
    got = rest
    while True:
        d = s.recv(65536)
        if not d:
            break
        got += d
    assert got == b"got 100000", f"half-close: {got[:80]!r}"
    s.close()


def case_status(url, path, want):
    """One request; its status must be want (a 502 for a 101 never asked for,
    or what an upgrade gets where the proxy does not tunnel)."""
    s = raw_conn(url)
    s.sendall(upgrade_req(path) if path.startswith("/echo") else
              f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    head, _ = read_head(s)
    assert head.split(" ")[1] == want, f"{path}: want {want}: {head}"
    s.close()


def case_slow_reader(url, size):
    """The upstream sends size bytes as one message; we read it slowly, a
    little at a time, so that the proxy's back-pressure holds the upstream."""
    size = int(size)
    s = raw_conn(url)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    s.sendall(upgrade_req(f"/big?{size}"))
    head, rest = read_head(s)
    assert head.startswith("HTTP/1.1 101"), head
    got = len(rest)
    buf = rest
    end = time.monotonic() + 120
    while got < size + 10 and time.monotonic() < end:
        d = s.recv(32768)
        if not d:
            break
        got += len(d)
        buf += d
        if len(buf) > 1 << 20:
            buf = buf[:16]  # the frame's head is all we check
        time.sleep(0.002)
    assert got >= size, f"slow reader: {got} of {size} bytes"
    s.close()


def case_idle_memory(url, n, pid, bound):
    """n quiet tunnels (after 20 that warm the pools) grow the proxy's RSS by
    less than bound bytes each: a quiet tunnel holds no parser, no output
    buffer, no exchange (as the idle keep-alive connection is measured)."""
    n, bound = int(n), int(bound)

    def rss():
        with open(f"/proc/{pid}/status") as f:
            return int([ln for ln in f if ln.startswith("VmRSS")][0].split()[1]) * 1024

    def tunnel():
        s = raw_conn(url)
        s.sendall(upgrade_req("/echo"))
        head, _ = read_head(s)
        assert head.startswith("HTTP/1.1 101"), head
        return s

    keep = [tunnel() for _ in range(20)]
    time.sleep(1.5)  # the exchanges' free list is trimmed once a second
    before = rss()
    keep += [tunnel() for _ in range(n)]
    time.sleep(1.5)
    per = (rss() - before) / n
    print(f"{per:.0f} bytes per quiet tunnel")
    assert per < bound, f"{per:.0f} bytes per quiet tunnel (bound {bound})"
    for s in keep:
        s.close()


def fd_room():
    """Every descriptor the hard limit allows: 1,000 tunnels are 1,000
    sockets in the client and as many in the upstream."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else 65536
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def main():
    fd_room()
    mode = sys.argv[1]
    if mode == "server":
        a = sys.argv[2:]
        asyncio.run(serve(a[0], float(a[1]), a[2], *(a[3:5] if len(a) > 3 else [])))
        return
    if mode == "liar":
        asyncio.run(liar(sys.argv[2], float(sys.argv[3])))
        return
    url, case, args = sys.argv[2], sys.argv[3], sys.argv[4:]
    cases = {
        "echo": case_echo, "large": case_large, "vanish": case_vanish, "idle": case_idle,
        "many": case_many, "drain": case_drain, "hold": case_hold, "client_vanish": case_client_vanish,
    }
    raw = {
        "plain_then_upgrade": case_plain_then_upgrade, "refused": case_refused,
        "status": case_status, "half_close": case_half_close, "slow_reader": case_slow_reader, "idle_memory": case_idle_memory,
    }
    try:
        if case in cases:
            asyncio.run(cases[case](url, *args))
        else:
            raw[case](url, *args)
    except (AssertionError, OSError, websockets.WebSocketException, asyncio.TimeoutError) as e:
        print(f"{case}: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
