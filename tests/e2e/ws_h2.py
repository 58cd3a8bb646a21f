#!/usr/bin/env python3
"""RFC 8441 clients for tests/e2e/proxy_websocket_h2.sh: WebSocket over an
HTTP/2 stream (extended CONNECT), on Debian's python3-h2, with the WebSocket
frames written here (RFC 6455: masked from the client, unmasked back).

  ws_h2.py CASE PORT [tls] [ARGS]

Cases: echo, large SIZE, slow SIZE, vanish, refused, mixed, idle, halfclose,
badproof, malformed, nosetting, status PATH CODE, drain FLAGFILE. Each prints "CASE ok" and exits 0 when it
held, else a reason on stderr and exit 1. Every wait is bounded (T_OUT)."""
import hashlib
import os
import socket
import ssl
import struct
import sys
import time

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

T_OUT = 30
CONNECT_ERROR = 0xA
PROTOCOL_ERROR = 0x1


class Fail(Exception):
    pass


def check(cond, why):
    if not cond:
        raise Fail(why)


# ---- WebSocket frames ------------------------------------------------------------------


def ws_frame(payload, op=0x2, fin=True):
    """A client frame: masked (RFC 6455 5.3)."""
    n = len(payload)
    head = bytes([(0x80 if fin else 0) | op])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack("!H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack("!Q", n)
    key = os.urandom(4)
    return head + key + masked(payload, key)


def masked(payload, key):
    m = (key * (len(payload) // 4 + 1))[: len(payload)]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(m, "big")).to_bytes(len(payload), "big")


def ws_parse(buf):
    """One server frame off the front of buf: (op, payload, rest) or None."""
    if len(buf) < 2:
        return None
    op, b1 = buf[0] & 0x0F, buf[1]
    check(not b1 & 0x80, "a masked frame from the server")
    n, at = b1 & 0x7F, 2
    if n == 126:
        if len(buf) < 4:
            return None
        n, at = struct.unpack("!H", buf[2:4])[0], 4
    elif n == 127:
        if len(buf) < 10:
            return None
        n, at = struct.unpack("!Q", buf[2:10])[0], 10
    if len(buf) < at + n:
        return None
    return op, bytes(buf[at : at + n]), buf[at + n :]


# ---- the HTTP/2 connection --------------------------------------------------------------


class Client:
    def __init__(self, port, tls=False, window=None, validate=True):
        s = socket.create_connection(("127.0.0.1", port), timeout=T_OUT)
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            ctx.set_alpn_protocols(["h2"])
            s = ctx.wrap_socket(s, server_hostname="127.0.0.1")
            check(s.selected_alpn_protocol() == "h2", "no h2 by ALPN")
        self.s, self.port, self.scheme = s, port, "https" if tls else "http"
        cfg = h2.config.H2Configuration(client_side=True, header_encoding="utf-8",
                                        validate_outbound_headers=validate,
                                        normalize_outbound_headers=validate)
        self.c = h2.connection.H2Connection(config=cfg)
        self.c.initiate_connection()
        if window:
            self.c.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window})
        self.flush()
        self.streams = {}  # id: {"headers", "data", "ended", "reset"}
        self.server_settings = None
        self.auto_ack = True
        deadline = time.monotonic() + T_OUT
        while self.server_settings is None:
            self.pump(deadline)

    def flush(self):
        d = self.c.data_to_send()
        if d:
            self.s.sendall(d)

    def st(self, sid):
        return self.streams.setdefault(sid, {"headers": None, "data": bytearray(), "ended": False,
                                             "reset": None, "unacked": 0})

    def pump(self, deadline):
        """One read from the socket and its events."""
        left = deadline - time.monotonic()
        check(left > 0, "timed out")
        self.s.settimeout(left)
        try:
            d = self.s.recv(65536)
        except socket.timeout:
            raise Fail("timed out")
        check(d, "the server closed the connection")
        for e in self.c.receive_data(d):
            if isinstance(e, h2.events.RemoteSettingsChanged):
                if self.server_settings is None:
                    self.server_settings = {k: v.new_value for k, v in e.changed_settings.items()}
            elif isinstance(e, h2.events.ResponseReceived):
                self.st(e.stream_id)["headers"] = dict(e.headers)
            elif isinstance(e, h2.events.DataReceived):
                st = self.st(e.stream_id)
                st["data"] += e.data
                if self.auto_ack:
                    self.c.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
                else:
                    st["unacked"] += e.flow_controlled_length
            elif isinstance(e, h2.events.StreamEnded):
                self.st(e.stream_id)["ended"] = True
            elif isinstance(e, h2.events.StreamReset):
                self.st(e.stream_id)["reset"] = e.error_code
            elif isinstance(e, h2.events.ConnectionTerminated):
                raise Fail(f"GOAWAY {e.error_code}")
        self.flush()

    def wait(self, cond, what):
        deadline = time.monotonic() + T_OUT
        while not cond():
            try:
                self.pump(deadline)
            except Fail as e:
                raise Fail(f"{what}: {e}")

    def connect(self, path, protocol="websocket", extra=()):
        sid = self.c.get_next_available_stream_id()
        hdrs = [(":method", "CONNECT"), (":protocol", protocol), (":scheme", self.scheme),
                (":path", path), (":authority", f"127.0.0.1:{self.port}"),
                ("sec-websocket-version", "13")] + list(extra)
        self.c.send_headers(sid, hdrs)
        self.flush()
        st = self.st(sid)
        self.wait(lambda: st["headers"] or st["reset"] is not None, f"the answer to {path}")
        return sid

    def opened(self, path, **kw):
        sid = self.connect(path, **kw)
        h = self.streams[sid]["headers"]
        check(h and h[":status"] == "200", f"{path}: {h} reset {self.streams[sid]['reset']}")
        check("sec-websocket-accept" not in h, "Sec-WebSocket-Accept in an RFC 8441 answer")
        check("content-length" not in h, "Content-Length on a tunnel's 200")
        return sid

    def get(self, path):
        sid = self.c.get_next_available_stream_id()
        self.c.send_headers(sid, [(":method", "GET"), (":scheme", self.scheme), (":path", path),
                                  (":authority", f"127.0.0.1:{self.port}")], end_stream=True)
        self.flush()
        return sid

    def send(self, sid, data, end=False):
        """DATA as the stream's and the connection's windows allow."""
        view = memoryview(data)
        deadline = time.monotonic() + T_OUT
        while view:
            room = min(self.c.local_flow_control_window(sid), self.c.max_outbound_frame_size)
            if room <= 0:
                self.pump(deadline)
                continue
            self.c.send_data(sid, bytes(view[:room]))
            view = view[room:]
            self.flush()
        if end:
            self.c.end_stream(sid)
            self.flush()

    def msg(self, sid):
        """The next whole WebSocket message of the stream (op, payload)."""
        st = self.st(sid)
        while True:
            f = ws_parse(st["data"])
            if f:
                op, payload, rest = f
                st["data"] = bytearray(rest)
                return op, payload
            check(not st["ended"] and st["reset"] is None,
                  f"stream {sid} ended (reset {st['reset']}) inside a message")
            self.wait(lambda: ws_parse(st["data"]) or st["ended"] or st["reset"] is not None,
                      "a WebSocket message")


def echo_once(cl, sid, payload, op):
    cl.send(sid, ws_frame(payload, op))
    got_op, got = cl.msg(sid)
    check((got_op, got) == (op, payload), f"echo of {len(payload)} bytes: op {got_op}, {len(got)} bytes")


def close_handshake(cl, sid):
    cl.send(sid, ws_frame(struct.pack("!H", 1000) + b"bye", op=0x8))
    op, payload = cl.msg(sid)
    check(op == 0x8 and payload[:2] == struct.pack("!H", 1000), f"close answered {op} {payload!r}")
    st = cl.streams[sid]
    # The upstream closes its TCP connection after the close frames: END_STREAM.
    cl.wait(lambda: st["ended"] or st["reset"] is not None, "the end after the close handshake")
    check(st["ended"] and st["reset"] in (None, 0), f"ended with reset {st['reset']}")


# ---- cases ------------------------------------------------------------------------------------


def case_echo(port, tls):
    cl = Client(port, tls)
    check(cl.server_settings.get(h2.settings.SettingCodes.ENABLE_CONNECT_PROTOCOL) == 1,
          f"no SETTINGS_ENABLE_CONNECT_PROTOCOL: {cl.server_settings}")
    sid = cl.opened("/echo")
    echo_once(cl, sid, "hello".encode(), 0x1)
    echo_once(cl, sid, ("ünïcödé " * 100).encode(), 0x1)
    echo_once(cl, sid, b"\x00\x01\xff" * 1000, 0x2)
    echo_once(cl, sid, b"", 0x2)
    close_handshake(cl, sid)


def pattern(n):
    return (bytes(i % 251 for i in range(256)) * (n // 256 + 1))[:n]


def case_large(port, tls, size):
    """SIZE bytes up and back, through both windows."""
    cl = Client(port, tls)
    sid = cl.opened("/echo")
    data = pattern(int(size))
    cl.send(sid, ws_frame(data, 0x2))
    op, got = cl.msg(sid)
    check(op == 0x2 and got == data, f"large echo: {len(got)} bytes, equal {got == data}")
    close_handshake(cl, sid)


def case_slow(port, tls, size):
    """SIZE bytes from the upstream to a reader whose stream window is 16 KiB
    and who opens it again slowly: what it has not taken waits behind its
    window (back-pressure), and arrives whole."""
    n = int(size)
    cl = Client(port, tls, window=16384)
    sid = cl.opened(f"/big?{n}")
    cl.auto_ack = False
    st = cl.st(sid)
    deadline = time.monotonic() + 4 * T_OUT
    while not ws_parse(st["data"]):
        check(st["reset"] is None and not st["ended"], f"ended at {len(st['data'])} bytes")
        if st["unacked"]:
            time.sleep(0.01)
            cl.c.acknowledge_received_data(st["unacked"], sid)
            st["unacked"] = 0
            cl.flush()
        cl.pump(deadline)
    op, got = cl.msg(sid)
    check(op == 0x2 and hashlib.sha256(got).digest() == hashlib.sha256(pattern(n)).digest(),
          f"slow: {len(got)} bytes")
    cl.auto_ack = True
    cl.c.acknowledge_received_data(st["unacked"], sid) if st["unacked"] else None
    close_handshake(cl, sid)


def case_vanish(port, tls):
    """The upstream drops its TCP connection: the stream ends, no close frame."""
    cl = Client(port, tls)
    sid = cl.opened("/vanish")
    cl.send(sid, ws_frame(b"x", 0x1))
    st = cl.streams[sid]
    cl.wait(lambda: st["ended"] or st["reset"] is not None, "the end of a vanished upstream")
    check(ws_parse(st["data"]) is None, "a frame came from a vanished upstream")
    # Its FIN is END_STREAM (then RST_STREAM NO_ERROR: we take nothing
    # more), its reset is CONNECT_ERROR.
    check(st["ended"] or st["reset"] == CONNECT_ERROR, f"reset {st['reset']}")
    # The connection goes on.
    sid2 = cl.opened("/echo")
    echo_once(cl, sid2, b"still", 0x1)


def case_refused(port, tls):
    """The upstream refuses the upgrade: its 403 is the answer, and the stream ends."""
    cl = Client(port, tls)
    sid = cl.connect("/nope")
    st = cl.streams[sid]
    check(st["headers"] and st["headers"][":status"] == "403", f"refused: {st['headers']}")
    cl.wait(lambda: st["ended"] or st["reset"] is not None, "the refusal's end")
    check(bytes(st["data"]) == b"refused", f"refused body {bytes(st['data'])!r}")


def case_mixed(port, tls):
    """Two tunnels and ordinary requests on one connection, interleaved."""
    cl = Client(port, tls)
    a = cl.opened("/echo")
    g1 = cl.get("/plain")
    b = cl.opened("/echo")
    for i in range(20):
        cl.send(a, ws_frame(f"a{i}".encode(), 0x1))
        cl.send(b, ws_frame(f"b{i}".encode() * 1000, 0x2))
    for i in range(20):
        check(cl.msg(a) == (0x1, f"a{i}".encode()), f"tunnel a message {i}")
        check(cl.msg(b) == (0x2, f"b{i}".encode() * 1000), f"tunnel b message {i}")
    g2 = cl.get("/plain")
    for g in (g1, g2):
        st = cl.st(g)
        cl.wait(lambda: st["ended"] or st["reset"] is not None, "a GET beside tunnels")
        check(st["headers"][":status"] == "200" and bytes(st["data"]) == b"plain ok",
              f"GET /plain: {st['headers']} {bytes(st['data'])!r}")
    close_handshake(cl, a)
    echo_once(cl, b, b"b after a", 0x1)
    close_handshake(cl, b)


def case_idle(port, tls):
    """tunnel_idle_timeout: a tunnel that carries nothing is reset."""
    cl = Client(port, tls)
    sid = cl.opened("/echo")
    echo_once(cl, sid, b"x", 0x1)
    st = cl.streams[sid]
    cl.wait(lambda: st["ended"] or st["reset"] is not None, "the idle tunnel's end")
    check(st["reset"] == CONNECT_ERROR, f"idle tunnel: reset {st['reset']}, ended {st['ended']}")


def case_halfclose(port, tls):
    """Our END_STREAM reaches the upstream as a FIN; it still answers, then
    its FIN reaches us as END_STREAM (a raw protocol: no WebSocket key)."""
    cl = Client(port, tls)
    sid = cl.opened("/half", protocol="x-raw")
    cl.send(sid, b"x" * 100000, end=True)
    st = cl.streams[sid]
    cl.wait(lambda: st["ended"] or st["reset"] is not None, "the upstream's end")
    check(st["ended"] and bytes(st["data"]) == b"got 100000", f"half-close: {bytes(st['data'])[:80]!r}")


def case_badproof(port, tls):
    """An upstream whose 101 does not prove our key: 502, no tunnel."""
    cl = Client(port, tls)
    sid = cl.connect("/x")
    h = cl.streams[sid]["headers"]
    check(h and h[":status"] == "502", f"a 101 without the proof: {h}")


def case_drain(port, tls, flagfile):
    """A tunnel open when the server drains: FLAGFILE is written once it
    echoes; the drain's GOAWAY leaves it open (python3-h2 takes no frame
    after a GOAWAY, so the rest is read raw) until drain_timeout closes the
    connection."""
    cl = Client(port, tls)
    sid = cl.opened("/echo")
    echo_once(cl, sid, b"before", 0x1)
    with open(flagfile, "w") as f:
        f.write("open\n")
    end = time.monotonic() + T_OUT
    while time.monotonic() < end:
        cl.s.settimeout(max(0.1, end - time.monotonic()))
        try:
            if not cl.s.recv(65536):
                return
        except socket.timeout:
            break
        except OSError:
            return
    raise Fail("the connection outlived the drain timeout")


def case_status(port, tls, path, want):
    """An extended CONNECT answered with a status of ours (501: the route
    cannot tunnel)."""
    cl = Client(port, tls)
    sid = cl.connect(path)
    h = cl.streams[sid]["headers"]
    check(h and h[":status"] == want, f"CONNECT {path}: {h}, reset {cl.streams[sid]['reset']}")


def reset_code(cl, sid):
    st = cl.st(sid)
    cl.wait(lambda: st["reset"] is not None or st["headers"], "an answer or a reset")
    return st["reset"], st["headers"]


def case_malformed(port, tls):
    """:protocol without :path (or :scheme) is malformed: a stream
    PROTOCOL_ERROR; a plain CONNECT is refused as before; a GET still works."""
    cl = Client(port, tls, validate=False)
    auth = (":authority", f"127.0.0.1:{port}")
    for drop in (":path", ":scheme"):
        sid = cl.c.get_next_available_stream_id()
        hdrs = [(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", cl.scheme),
                (":path", "/echo"), auth]
        cl.c.send_headers(sid, [h for h in hdrs if h[0] != drop])
        cl.flush()
        code, h = reset_code(cl, sid)
        check(code == PROTOCOL_ERROR, f"CONNECT with :protocol without {drop}: reset {code}, {h}")
    sid = cl.c.get_next_available_stream_id()
    cl.c.send_headers(sid, [(":method", "CONNECT"), auth])
    cl.flush()
    code, h = reset_code(cl, sid)
    check(h and h[":status"] == "501", f"a plain CONNECT: {h}, reset {code}")
    g = cl.get("/plain")
    st = cl.st(g)
    cl.wait(lambda: st["ended"], "a GET after them")
    check(bytes(st["data"]) == b"plain ok", "GET after malformed CONNECTs")


def case_plain(port, tls):
    """A plain CONNECT (RFC 9113 8.5) on whatever route takes it (respond,
    say): 501, never a scenario's 2xx, which would tell the client its TCP
    tunnel is open (RFC 9110 9.3.6)."""
    cl = Client(port, tls, validate=False)
    sid = cl.c.get_next_available_stream_id()
    cl.c.send_headers(sid, [(":method", "CONNECT"), (":authority", "example.com:443")])
    cl.flush()
    code, h = reset_code(cl, sid)
    check(h and h[":status"] == "501", f"a plain CONNECT: {h}, reset {code}")


def case_nosetting(port, tls):
    """No route tunnels: no SETTINGS_ENABLE_CONNECT_PROTOCOL, and a :protocol
    is a stream PROTOCOL_ERROR (RFC 8441 3)."""
    cl = Client(port, tls, validate=False)
    check(not cl.server_settings.get(h2.settings.SettingCodes.ENABLE_CONNECT_PROTOCOL),
          f"SETTINGS_ENABLE_CONNECT_PROTOCOL offered: {cl.server_settings}")
    sid = cl.connect("/echo")
    code, h = reset_code(cl, sid)
    check(code == PROTOCOL_ERROR, f":protocol without the setting: reset {code}, {h}")


def main():
    case, port, args = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    tls = bool(args) and args[0] == "tls"
    if tls:
        args = args[1:]
    cases = {"echo": case_echo, "large": case_large, "slow": case_slow, "vanish": case_vanish,
             "refused": case_refused, "mixed": case_mixed, "idle": case_idle,
             "halfclose": case_halfclose, "badproof": case_badproof, "malformed": case_malformed, "status": case_status, "drain": case_drain,
             "nosetting": case_nosetting, "plain": case_plain}
    try:
        cases[case](port, tls, *args)
    except (Fail, OSError, h2.exceptions.ProtocolError) as e:
        print(f"{case}: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
    print(f"{case} ok")


if __name__ == "__main__":
    main()
