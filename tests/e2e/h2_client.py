#!/usr/bin/env python3
"""HTTP/2 clients for the http2 e2e tests, on Debian's python3-hyperframe and
python3-hpack (frames and header blocks), not python3-h2: h2 4.1 takes any
GOAWAY for the end of the connection and refuses the frames of the streams a
graceful GOAWAY still lets finish, which is what these tests watch. Prior
knowledge on 127.0.0.1:PORT (h2c). Each mode prints one JSON line of facts
that the shell script judges; every wait is bounded.

  load PORT SECONDS STOP [CONNS [STREAMS]]
      CONNS (4) threads, each keeping STREAMS (10) GET / streams in flight on
      one connection until the file STOP exists or SECONDS are up. After a
      GOAWAY a thread opens no stream on that connection (RFC 9113 6.8), lets
      the streams the GOAWAY covers finish, and goes on on a new connection.
      A stream is lost when it was not answered 200 with the respond body and
      neither the GOAWAY (an id above its last stream id) nor a REFUSED_STREAM
      said it was not processed (RFC 9113 8.7: those are sent again, as
      clients do, and counted as retried). Prints ok, lost, retried, goaways,
      connections and the first few losses.
  slow PORT PATH READY
      One GET PATH read slowly (a 16 KiB stream window, 16 KiB acknowledged
      every 50 ms); READY is created once 128 KiB have arrived (the test then
      drains the server). Reading stays slow until the GOAWAY that ends the
      drain (a last stream id below 2^31-1) or 3 s after the first GOAWAY,
      then takes the rest at full speed, until the end of the stream and the
      connection's close. Prints the status, byte count, sha256, the GOAWAYs
      (seconds since READY, last stream id, code) and how it ended.
  idle PORT PATH READY
      One GET PATH answered, then nothing: READY is created; prints the
      status, the GOAWAYs and when the server closed the connection (seconds
      since READY)."""
import hashlib
import json
import os
import socket
import sys
import threading
import time

import hpack
from hyperframe.frame import (ContinuationFrame, DataFrame, Frame, GoAwayFrame, HeadersFrame,
                              PingFrame, RstStreamFrame, SettingsFrame, WindowUpdateFrame)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
REFUSED_STREAM = 7
MAX_ID = 2**31 - 1


class Stream:
    def __init__(self):
        self.status = None
        self.length = 0
        self.sha = hashlib.sha256()
        self.head = b""  # the first bytes of the body
        self.ended = False
        self.reset = None


class Conn:
    """One HTTP/2 connection; frames parsed as they come, acks sent for
    SETTINGS and PING, DATA acknowledged at once unless slow is set."""

    def __init__(self, port, window=65535, timeout=10):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.enc = hpack.Encoder()
        self.dec = hpack.Decoder()
        self.buf = b""
        self.next_id = 1
        self.streams = {}
        self.goaways = []  # (monotonic time, last stream id, error code)
        self.block = None  # (stream id, bytes, end_stream) while CONTINUATION is due
        self.slow = False
        self.unacked = {}  # stream id -> bytes not yet acknowledged (slow)
        settings = SettingsFrame(0)
        settings.settings = {SettingsFrame.ENABLE_PUSH: 0, SettingsFrame.INITIAL_WINDOW_SIZE: window}
        self.s.sendall(PREFACE + settings.serialize())

    def request(self, path, authority="127.0.0.1"):
        sid = self.next_id
        self.next_id += 2
        f = HeadersFrame(sid)
        f.data = self.enc.encode([(":method", "GET"), (":scheme", "http"),
                                  (":authority", authority), (":path", path)])
        f.flags.add("END_HEADERS")
        f.flags.add("END_STREAM")
        self.s.sendall(f.serialize())
        self.streams[sid] = Stream()
        return sid

    def read(self):
        """One recv: the frames it completed, handled; None at the end."""
        d = self.s.recv(262144)
        if not d:
            return None
        self.buf += d
        frames = []
        while len(self.buf) >= 9:
            f, n = Frame.parse_frame_header(memoryview(self.buf[:9]))
            if len(self.buf) < 9 + n:
                break
            f.parse_body(memoryview(self.buf[9:9 + n]))
            self.buf = self.buf[9 + n:]
            frames.append(f)
            self.handle(f)
        return frames

    def end_block(self, sid, data, end):
        for k, v in self.dec.decode(data, raw=True):
            if k == b":status" and sid in self.streams:
                self.streams[sid].status = int(v)
        if end and sid in self.streams:
            self.streams[sid].ended = True

    def handle(self, f):
        out = b""
        if isinstance(f, SettingsFrame) and "ACK" not in f.flags:
            ack = SettingsFrame(0)
            ack.flags.add("ACK")
            out += ack.serialize()
        elif isinstance(f, PingFrame) and "ACK" not in f.flags:
            ack = PingFrame(0)
            ack.flags.add("ACK")
            ack.opaque_data = f.opaque_data
            out += ack.serialize()
        elif isinstance(f, HeadersFrame):
            end = "END_STREAM" in f.flags
            if "END_HEADERS" in f.flags:
                self.end_block(f.stream_id, f.data, end)
            else:
                self.block = (f.stream_id, f.data, end)
        elif isinstance(f, ContinuationFrame) and self.block:
            sid, data, end = self.block
            self.block = (sid, data + f.data, end)
            if "END_HEADERS" in f.flags:
                self.block = None
                self.end_block(sid, data + f.data, end)
        elif isinstance(f, DataFrame):
            st = self.streams.get(f.stream_id)
            if st:
                st.length += len(f.data)
                st.sha.update(f.data)
                if len(st.head) < 64:
                    st.head += f.data[:64]
                if "END_STREAM" in f.flags:
                    st.ended = True
            n = f.flow_controlled_length
            if n:
                if self.slow:
                    self.unacked[f.stream_id] = self.unacked.get(f.stream_id, 0) + n
                else:
                    out += self.window_update(f.stream_id, n)
        elif isinstance(f, RstStreamFrame):
            if f.stream_id in self.streams:
                self.streams[f.stream_id].reset = f.error_code
        elif isinstance(f, GoAwayFrame):
            self.goaways.append((time.monotonic(), f.last_stream_id, f.error_code))
        if out:
            self.s.sendall(out)

    def window_update(self, sid, n):
        out = WindowUpdateFrame(0)
        out.window_increment = n
        data = out.serialize()
        st = self.streams.get(sid)
        if st and not st.ended and st.reset is None:
            w = WindowUpdateFrame(sid)
            w.window_increment = n
            data += w.serialize()
        return data

    def ack(self, limit):
        """Acknowledges up to limit bytes held back (slow reading)."""
        out = b""
        for sid in list(self.unacked):
            n = min(self.unacked[sid], limit)
            if n:
                out += self.window_update(sid, n)
                self.unacked[sid] -= n
                limit -= n
        if out:
            self.s.sendall(out)

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


def load(port, secs, stop, nconns=4, nstreams=10):
    end = time.monotonic() + secs
    lock = threading.Lock()
    c = {"ok": 0, "lost": 0, "retried": 0, "goaways": 0, "connections": 0, "losses": [],
         "goaway_samples": []}

    def going():
        return time.monotonic() < end and not os.path.exists(stop)

    def add(key, n=1, why=None):
        with lock:
            c[key] += n
            if why and len(c["losses"]) < 5:
                c["losses"].append("%.3f %s" % (time.time(), why))

    def worker():
        while going():
            try:
                conn = Conn(port)
            except OSError as e:
                add("lost", 1, "connect: %r" % e)
                time.sleep(0.01)  # counted once per try, not spun on
                continue
            add("connections")
            inflight = set()
            try:
                while True:
                    while not conn.goaways and going() and len(inflight) < nstreams:
                        inflight.add(conn.request("/"))
                    if not inflight:
                        break
                    try:
                        frames = conn.read()
                    except OSError as e:
                        frames = e
                    last = conn.goaways[-1][1] if conn.goaways else MAX_ID
                    for sid in list(inflight):
                        st = conn.streams[sid]
                        if st.ended:
                            inflight.discard(sid)
                            if st.status == 200 and st.head.startswith(b"Hello from scalwsd"):
                                add("ok")
                            else:
                                add("lost", 1, "stream %d: status %s, %r" % (sid, st.status, st.head))
                        elif st.reset is not None or sid > last:
                            inflight.discard(sid)
                            if st.reset in (None, REFUSED_STREAM):
                                add("retried")  # not processed: sent again
                            else:
                                add("lost", 1, "stream %d reset %d" % (sid, st.reset))
                    if frames is None or isinstance(frames, OSError):
                        for sid in inflight:
                            add("lost", 1, "stream %d: connection ended (%r) after GOAWAYs %r" % (
                                sid, frames, [g[1:] for g in conn.goaways]))
                        break
            finally:
                add("goaways", len(conn.goaways))
                with lock:
                    if conn.goaways and len(c["goaway_samples"]) < 4:
                        c["goaway_samples"].append([g[1:] for g in conn.goaways])
                conn.close()

    ts = [threading.Thread(target=worker) for _ in range(nconns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print(json.dumps(c))


def slow(port, path, ready):
    conn = Conn(port, window=16384)
    conn.slow = True
    sid = conn.request(path)
    st = conn.streams[sid]
    conn.s.settimeout(0.05)
    t_ready = None
    fast_at = None
    eof = False
    received_after_goaway = 0
    deadline = time.monotonic() + 60  # a guard: the test's own bounds are shorter
    next_ack = time.monotonic()
    while time.monotonic() < deadline:
        now = time.monotonic()
        if conn.slow and now >= next_ack:
            conn.ack(16384)
            next_ack = now + 0.05
        try:
            before = st.length
            frames = conn.read()
            if conn.goaways:
                received_after_goaway += st.length - before
        except socket.timeout:
            frames = []
        except OSError:
            frames = None
        if frames is None:
            eof = True
            break
        if t_ready is None and st.length >= 131072:
            t_ready = time.monotonic()
            open(ready, "w").close()
        if conn.slow and conn.goaways:
            final = any(g[1] != MAX_ID for g in conn.goaways)
            if final or time.monotonic() > conn.goaways[0][0] + 3:
                conn.slow = False
                fast_at = time.monotonic()
                conn.ack(1 << 30)
    base = t_ready or 0
    print(json.dumps({
        "status": st.status, "bytes": st.length, "sha256": st.sha.hexdigest(),
        "ended": st.ended, "reset": st.reset, "eof": eof,
        "goaways": [[round(t - base, 3), last, code] for t, last, code in conn.goaways],
        "fast_after": round(fast_at - base, 3) if fast_at else None,
        "bytes_after_goaway": received_after_goaway}))


def idle(port, path, ready):
    conn = Conn(port)
    sid = conn.request(path)
    deadline = time.monotonic() + 30
    while not conn.streams[sid].ended and time.monotonic() < deadline:
        if conn.read() is None:
            break
    open(ready, "w").close()
    t_ready = time.monotonic()
    closed = None
    while time.monotonic() < deadline:
        try:
            if conn.read() is None:
                closed = time.monotonic()
                break
        except socket.timeout:
            continue
        except OSError:
            closed = time.monotonic()
            break
    print(json.dumps({
        "status": conn.streams[sid].status,
        "goaways": [[round(t - t_ready, 3), last, code] for t, last, code in conn.goaways],
        "closed_after": round(closed - t_ready, 3) if closed else None}))


def main():
    mode, port = sys.argv[1], int(sys.argv[2])
    if mode == "load":
        load(port, float(sys.argv[3]), sys.argv[4], *[int(a) for a in sys.argv[5:7]])
    elif mode == "slow":
        slow(port, sys.argv[3], sys.argv[4])
    elif mode == "idle":
        idle(port, sys.argv[3], sys.argv[4])
    else:
        sys.exit("unknown mode " + mode)


main()
