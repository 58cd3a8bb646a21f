"""The wire side of the HTTP/2 conformance suite (tests/h2/h2_suite.py): a
raw-socket client that writes frames it builds itself (so it can write the
malformed ones a real client library refuses to) and reads the server's frames
with hyperframe and its header blocks with hpack, every read bounded by a
deadline.

Three parts, each the one place for what it does:
  - frame builders: frame() and one function per frame type, returning bytes;
  - HPACK pieces for hand-made field blocks (hp_*), beside hpack.Encoder for
    the well-formed ones;
  - Conn: connect (TCP or TLS with ALPN h2), handshake, send, next() reads one
    frame or reports "closed" or a timeout, and the waits the cases are made
    of (expect_connection_error, expect_stream_error, expect_response, ...).
"""
import select
import socket
import ssl
import struct
import sys
import time

try:
    import hpack
    import hyperframe.frame as hf
except ImportError:  # a python3 that is not Debian's (pyenv): Debian's modules are pure Python
    sys.path.append("/usr/lib/python3/dist-packages")
    import hpack
    import hyperframe.frame as hf
from hpack.huffman import HuffmanEncoder
from hpack.huffman_constants import REQUEST_CODES, REQUEST_CODES_LENGTH
from hyperframe.exceptions import HyperframeError

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

# Frame types (RFC 9113 6).
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, \
    CONTINUATION = range(10)
TYPE_NAMES = ["DATA", "HEADERS", "PRIORITY", "RST_STREAM", "SETTINGS", "PUSH_PROMISE", "PING",
              "GOAWAY", "WINDOW_UPDATE", "CONTINUATION"]
# Flags.
END_STREAM = ACK = 0x1
END_HEADERS = 0x4
PADDED = 0x8
PRIORITY_FLAG = 0x20
# Error codes (RFC 9113 7).
ERRORS = ["NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT",
          "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR",
          "CONNECT_ERROR", "ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED"]
(NO_ERROR, PROTOCOL_ERROR, INTERNAL_ERROR, FLOW_CONTROL_ERROR, SETTINGS_TIMEOUT, STREAM_CLOSED,
 FRAME_SIZE_ERROR, REFUSED_STREAM, CANCEL, COMPRESSION_ERROR, CONNECT_ERROR, ENHANCE_YOUR_CALM,
 INADEQUATE_SECURITY, HTTP_1_1_REQUIRED) = range(14)
# SETTINGS identifiers (RFC 9113 6.5.2).
HEADER_TABLE_SIZE, ENABLE_PUSH, MAX_CONCURRENT_STREAMS, INITIAL_WINDOW_SIZE, MAX_FRAME_SIZE, \
    MAX_HEADER_LIST_SIZE = range(1, 7)
SETTING_DEFAULTS = {HEADER_TABLE_SIZE: 4096, ENABLE_PUSH: 1, INITIAL_WINDOW_SIZE: 65535,
                    MAX_FRAME_SIZE: 16384}


LOG_FRAMES = 60  # verbose output per connection


def error_name(code):
    return ERRORS[code] if 0 <= code < len(ERRORS) else "0x%x" % code


def sni_name(authority):
    """The host of an authority (host, host:port, [v6]:port), for TLS SNI."""
    if authority.startswith("["):
        return authority[1:authority.index("]")]
    return authority.rsplit(":", 1)[0] if authority.count(":") == 1 else authority


def _b(s):
    return s.encode("latin-1") if isinstance(s, str) else bytes(s)


class CaseFailed(Exception):
    """The case's requirement does not hold; the message says what was seen."""


class CaseSkipped(Exception):
    """The case cannot be judged against this server (e.g. no limit advertised)."""


# ---------------------------------------------------------------------------
# Frame builders: bytes on the wire, valid or not as the caller asks.
# ---------------------------------------------------------------------------

def frame(ftype, flags, sid, payload=b"", length=None, reserved=False):
    """Any frame: the 9-byte header (length, type, flags, R bit + stream id)
    and the payload. length overrides the length field (a lie about the
    payload); reserved sets the R bit."""
    n = len(payload) if length is None else length
    return (struct.pack(">I", n)[1:] + bytes([ftype, flags])
            + struct.pack(">I", (sid & 0x7FFFFFFF) | (0x80000000 if reserved else 0)) + payload)


def _padded(payload, pad):
    """(flag, payload) for an optional pad length: Pad Length octet, payload, zeros."""
    if pad is None:
        return 0, payload
    return PADDED, bytes([pad]) + payload + b"\0" * pad


def _prio(dep, weight=16, exclusive=False):
    return struct.pack(">IB", (dep & 0x7FFFFFFF) | (0x80000000 if exclusive else 0), weight - 1)


def data(sid, payload=b"", end_stream=False, pad=None):
    flag, body = _padded(_b(payload), pad)
    return frame(DATA, flag | (END_STREAM if end_stream else 0), sid, body)


def headers(sid, block, end_stream=True, end_headers=True, pad=None, priority=None):
    """priority: (dependency, weight, exclusive) adds the PRIORITY flag and fields."""
    body, flags = block, 0
    if priority is not None:
        body, flags = _prio(*priority) + body, PRIORITY_FLAG
    flag, body = _padded(body, pad)
    flags |= flag | (END_STREAM if end_stream else 0) | (END_HEADERS if end_headers else 0)
    return frame(HEADERS, flags, sid, body)


def priority(sid, dep=0, weight=16, exclusive=False):
    return frame(PRIORITY, 0, sid, _prio(dep, weight, exclusive))


def rst_stream(sid, code=CANCEL):
    return frame(RST_STREAM, 0, sid, struct.pack(">I", code))


def settings(*pairs, ack=False, sid=0):
    """settings((INITIAL_WINDOW_SIZE, 0), ...); settings(ack=True) acknowledges."""
    return frame(SETTINGS, ACK if ack else 0, sid, b"".join(struct.pack(">HI", k, v) for k, v in pairs))


def push_promise(sid, promised, block, end_headers=True):
    return frame(PUSH_PROMISE, END_HEADERS if end_headers else 0, sid,
                 struct.pack(">I", promised) + block)


def ping(opaque=b"h2suite!", ack=False, sid=0):
    return frame(PING, ACK if ack else 0, sid, opaque)


def goaway(last_sid, code=NO_ERROR, debug=b"", sid=0):
    return frame(GOAWAY, 0, sid, struct.pack(">II", last_sid, code) + debug)


def window_update(sid, increment):
    return frame(WINDOW_UPDATE, 0, sid, struct.pack(">I", increment & 0xFFFFFFFF))


def continuation(sid, block, end_headers=True):
    return frame(CONTINUATION, END_HEADERS if end_headers else 0, sid, block)


# ---------------------------------------------------------------------------
# HPACK pieces (RFC 7541) for hand-made field blocks.
# ---------------------------------------------------------------------------

def hp_int(value, prefix, first=0):
    """An integer with an N-bit prefix (RFC 7541 5.1); first holds the bits above it."""
    top = (1 << prefix) - 1
    if value < top:
        return bytes([first | value])
    out, value = [first | top], value - top
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def huffman_bits(s):
    """The Huffman code of s as a string of '0'/'1' (no padding)."""
    return "".join(format(REQUEST_CODES[c], "0%db" % REQUEST_CODES_LENGTH[c]) for c in _b(s))


EOS_BITS = format(REQUEST_CODES[256], "0%db" % REQUEST_CODES_LENGTH[256])


def bits_to_bytes(bits):
    assert len(bits) % 8 == 0
    return bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits), 8))


def hp_str(s, huffman=False, raw=None):
    """A string literal (RFC 7541 5.2); raw gives the already Huffman-coded octets."""
    if raw is not None:
        return hp_int(len(raw), 7, 0x80) + raw
    s = _b(s)
    if huffman:
        enc = HuffmanEncoder(REQUEST_CODES, REQUEST_CODES_LENGTH).encode(s)
        return hp_int(len(enc), 7, 0x80) + enc
    return hp_int(len(s), 7) + s


def hp_indexed(index):
    return hp_int(index, 7, 0x80)


def hp_literal(name, value, indexing=False, name_index=None, huffman=False):
    """A literal field: with incremental indexing (6.2.1) or without (6.2.2),
    its name new or by index."""
    first, prefix = (0x40, 6) if indexing else (0x00, 4)
    if name_index is not None:
        return hp_int(name_index, prefix, first) + hp_str(value, huffman)
    return bytes([first]) + hp_str(name, huffman) + hp_str(value, huffman)


def hp_size_update(size):
    return hp_int(size, 5, 0x20)


# ---------------------------------------------------------------------------
# Received frames.
# ---------------------------------------------------------------------------

class CLOSED:
    """next() returns this class once the server closed (EOF, reset, TLS alert)."""


class Rx:
    """One frame from the server: type, flags, sid, payload and what its type
    carries (code, last_sid, settings, opaque, increment, data, fields)."""

    def __init__(self, header, payload):
        self.length = int.from_bytes(header[:3], "big")
        self.type, self.flags = header[3], header[4]
        self.sid = int.from_bytes(header[5:9], "big") & 0x7FFFFFFF
        self.payload = payload
        self.malformed = None
        self.fields = None  # decoded header list, on the frame that ends a block
        self.code = self.last_sid = self.increment = None
        self.opaque = self.data = b""
        self.settings = {}
        self.debug = b""
        try:
            f, _ = hf.Frame.parse_frame_header(memoryview(header))
            f.parse_body(memoryview(payload))
        except HyperframeError as e:
            self.malformed = "%s: %s" % (type(e).__name__, e)
            return
        if self.type in (RST_STREAM, GOAWAY):
            self.code = f.error_code
        if self.type == GOAWAY:
            self.last_sid, self.debug = f.last_stream_id, bytes(f.additional_data)
        elif self.type == SETTINGS:
            self.settings = dict(f.settings)
        elif self.type == PING:
            self.opaque = bytes(f.opaque_data)
        elif self.type == WINDOW_UPDATE:
            self.increment = f.window_increment
        elif self.type in (DATA, HEADERS, PUSH_PROMISE, CONTINUATION):
            self.data = bytes(f.data)

    @property
    def end_stream(self):
        return self.type in (DATA, HEADERS) and bool(self.flags & END_STREAM)

    @property
    def ack(self):
        return self.type in (SETTINGS, PING) and bool(self.flags & ACK)

    @property
    def status(self):
        for k, v in self.fields or ():
            if k == ":status":
                return int(v) if v.isdigit() else v
        return None

    def __str__(self):
        name = TYPE_NAMES[self.type] if self.type < len(TYPE_NAMES) else "type 0x%x" % self.type
        bits = []
        if self.sid:
            bits.append("stream %d" % self.sid)
        if self.malformed:
            bits.append("malformed (%s)" % self.malformed)
        elif self.type in (RST_STREAM, GOAWAY):
            bits.append(error_name(self.code))
            if self.type == GOAWAY:
                bits.append("last %d" % self.last_sid)
                if self.debug:
                    bits.append(repr(self.debug[:60].decode("latin-1")))
        elif self.type == SETTINGS:
            bits.append("ACK" if self.ack else
                        ", ".join("%d=%d" % kv for kv in sorted(self.settings.items())) or "empty")
        elif self.type == PING:
            bits.append(("ACK " if self.ack else "") + repr(self.opaque))
        elif self.type == WINDOW_UPDATE:
            bits.append("+%d" % self.increment)
        elif self.type == DATA:
            bits.append("%d bytes" % len(self.data))
        elif self.fields is not None:
            st = self.status
            bits.append(":status %s" % st if st is not None else "%d fields" % len(self.fields))
        if self.end_stream:
            bits.append("END_STREAM")
        return "%s(%s)" % (name, ", ".join(bits))


class Stream:
    """What the server sent on one stream: header blocks (decoded), body, end, reset."""

    def __init__(self):
        self.blocks = []
        self.data = bytearray()
        self.data_frames = 0
        self.ended = False
        self.rst = None

    def statuses(self):
        return [dict(b).get(":status") for b in self.blocks]

    def final_status(self):
        """The first non-1xx :status as an int, or None."""
        for s in self.statuses():
            if s and s.isdigit() and not s.startswith("1"):
                return int(s)
        return None


def _fmt_codes(codes):
    return " or ".join(error_name(c) for c in codes)


class Conn:
    """One client connection. cfg: host, port, tls, authority, timeout, verbose."""

    def __init__(self, cfg, log=None):
        self.cfg = cfg
        self.timeout = cfg.timeout
        self.log = log or (lambda s: None)
        self.sock = None
        self.buf = bytearray()
        self.closed = None  # why, once the server closed
        self.send_error = None
        self.peer = dict(SETTING_DEFAULTS)  # the server's settings
        self.peer_sent = {}  # exactly what its SETTINGS frames carried
        self.settings_acks = 0
        self.goaway = None
        self.streams = {}
        self.seen = []  # every frame received, in order (for failure messages)
        self.enc = hpack.Encoder()
        self.dec = hpack.Decoder(max_header_list_size=1 << 26)
        self.block = None  # (sid, bytearray, first frame) while a server header block is open
        self.auto_ack = True  # answer the server's SETTINGS and PING
        self.auto_window = False  # give back the window for DATA received
        self.notes = []  # how a wait was satisfied, when not the first way it names
        self.logged = 0

    def _log(self, text):
        """Verbose output, the first LOG_FRAMES lines of a connection (floods send thousands)."""
        self.logged += 1
        if self.logged <= LOG_FRAMES:
            self.log(text)
        elif self.logged == LOG_FRAMES + 1:
            self.log("  ... (further frames of this connection not shown)")

    def _log_sent(self, buf):
        if self.logged > LOG_FRAMES:
            return
        i = 0
        if buf.startswith(PREFACE):
            self._log("  -> preface")
            i = len(PREFACE)
        while i + 9 <= len(buf) and self.logged <= LOG_FRAMES:
            n = int.from_bytes(buf[i:i + 3], "big")
            t, fl, sid = buf[i + 3], buf[i + 4], int.from_bytes(buf[i + 5:i + 9], "big")
            name = TYPE_NAMES[t] if t < len(TYPE_NAMES) else "type 0x%x" % t
            self._log("  -> %s(stream %d, flags 0x%x, %d octets)" % (name, sid & 0x7FFFFFFF, fl, n))
            i += 9 + n

    # -- connecting ---------------------------------------------------------
    def connect(self, rcvbuf=None):
        s = socket.socket(socket.AF_INET6 if ":" in self.cfg.host else socket.AF_INET)
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.settimeout(self.timeout)
        try:
            s.connect((self.cfg.host, self.cfg.port))
        except OSError as e:
            s.close()
            raise CaseFailed("cannot connect to %s:%d: %s" % (self.cfg.host, self.cfg.port, e))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.cfg.tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            ctx.set_alpn_protocols(["h2"])
            try:
                s = ctx.wrap_socket(s, server_hostname=sni_name(self.cfg.authority or self.cfg.host))
            except (OSError, ssl.SSLError) as e:
                s.close()
                raise CaseFailed("TLS handshake: %s" % e)
            if s.selected_alpn_protocol() != "h2":
                s.close()
                raise CaseFailed("ALPN chose %r, not h2" % s.selected_alpn_protocol())
        self.sock = s
        return self

    def close(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None

    def send(self, *chunks):
        """Writes the chunks; False (and send_error set) when the server is gone.
        Bounded by the timeout: a server that stops reading fails the send."""
        if self.sock is None or self.send_error:
            return False
        buf = b"".join(chunks)
        self._log_sent(buf)
        try:
            self.sock.settimeout(self.timeout)
            self.sock.sendall(buf)
            return True
        except (TimeoutError, ssl.SSLWantWriteError):
            self.send_error = "send blocked for %.1f s (the server stopped reading)" % self.timeout
        except OSError as e:
            self.send_error = "send: %s" % (e.strerror or e)
        return False

    def handshake(self, *pairs):
        """Preface and our SETTINGS (pairs), then waits for the server's SETTINGS
        (acknowledged by next()) and for the ACK of ours."""
        self.send(PREFACE + settings(*pairs))
        deadline = time.monotonic() + self.timeout
        got_settings = False
        while not (got_settings and self.settings_acks):
            ev = self.next(deadline)
            if ev is None:
                raise CaseFailed("handshake: %s within %.1f s (saw %s)" % (
                    "no SETTINGS ACK" if got_settings else "no server SETTINGS", self.timeout, self.saw()))
            if ev is CLOSED:
                raise CaseFailed("handshake: connection closed (%s; saw %s)" % (self.closed, self.saw()))
            if ev.type == SETTINGS and not ev.ack:
                got_settings = True
        return self

    # -- reading ------------------------------------------------------------
    def _recv(self, deadline):
        """One read into buf; False on timeout. Marks closed on EOF or error."""
        remaining = deadline - time.monotonic()
        pending = isinstance(self.sock, ssl.SSLSocket) and self.sock.pending()
        if remaining <= 0 and not pending:
            # A last look without waiting: is something there already?
            try:
                r, _, _ = select.select([self.sock], [], [], 0)
            except (OSError, ValueError):
                r = [self.sock]
            if not r:
                return False
            remaining = 0.05
        try:
            self.sock.settimeout(max(remaining, 0.001))
            chunk = self.sock.recv(1 << 16)
        except (TimeoutError, BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return False
        except (OSError, ssl.SSLError) as e:
            self.closed = "%s" % (e.strerror or e)
            return True
        if not chunk:
            self.closed = "EOF"
        self.buf += chunk
        return True

    def next(self, deadline):
        """The next frame from the server, CLOSED once it closed, None at the deadline."""
        while True:
            if len(self.buf) >= 9:
                n = int.from_bytes(self.buf[:3], "big")
                if len(self.buf) >= 9 + n:
                    header, payload = bytes(self.buf[:9]), bytes(self.buf[9:9 + n])
                    del self.buf[:9 + n]
                    return self._got(Rx(header, payload))
            if self.closed or self.sock is None:
                if self.closed is None:
                    self.closed = "closed by the client"
                return CLOSED
            if not self._recv(deadline):
                return None

    def stream(self, sid):
        return self.streams.setdefault(sid, Stream())

    def _got(self, f):
        self.seen.append(f)
        self._track(f)
        self._log("  <- %s" % f)
        return f

    def _track(self, f):
        """What a frame changes: settings, stream states, the HPACK decoder; and
        the automatic answers (SETTINGS ACK, PING ACK, WINDOW_UPDATE)."""
        if f.malformed:
            return
        if f.type == SETTINGS:
            if f.ack:
                self.settings_acks += 1
            else:
                self.peer.update(f.settings)
                self.peer_sent.update(f.settings)
                if self.auto_ack:
                    self.send(settings(ack=True))
        elif f.type == PING and not f.ack and self.auto_ack:
            self.send(ping(f.opaque, ack=True))
        elif f.type == GOAWAY:
            self.goaway = f
        elif f.type == RST_STREAM:
            self.stream(f.sid).rst = f.code
        elif f.type == DATA:
            st = self.stream(f.sid)
            st.data += f.data
            st.data_frames += 1
            if f.end_stream:
                st.ended = True
            if self.auto_window and f.length:
                self.send(window_update(0, f.length),
                          b"" if f.end_stream else window_update(f.sid, f.length))
        elif f.type in (HEADERS, PUSH_PROMISE):
            self.block = (f.sid, bytearray(f.data), f)
            if f.flags & END_HEADERS:
                self._end_block(f)
        elif f.type == CONTINUATION and self.block is not None:
            self.block[1].extend(f.data)
            if f.flags & END_HEADERS:
                self._end_block(f)

    def _end_block(self, last):
        sid, block, first = self.block
        self.block = None
        try:
            fields = [(k, v) for k, v in self.dec.decode(bytes(block))]
        except Exception as e:  # noqa: BLE001 - hpack raises several kinds
            last.malformed = "undecodable header block: %s" % e
            return
        last.fields = first.fields = fields
        if first.type == HEADERS:
            st = self.stream(sid)
            st.blocks.append(fields)
            if first.flags & END_STREAM:
                st.ended = True

    def saw(self, n=4):
        """The last frames received, for failure messages."""
        tail = [str(f) for f in self.seen[-n:]]
        if self.closed:
            tail.append("closed (%s)" % self.closed)
        return "; ".join(tail) if tail else "nothing"

    def drain(self, seconds=0.0):
        """Reads whatever arrives within seconds (0: what is already there)."""
        deadline = time.monotonic() + seconds
        while True:
            ev = self.next(deadline)
            if ev is None or ev is CLOSED:
                return ev

    # -- requests -----------------------------------------------------------
    def request_fields(self, method="GET", path=None, extra=(), authority=None, scheme=None):
        cfg = self.cfg
        return [(":method", method), (":scheme", scheme or ("https" if cfg.tls else "http")),
                (":path", path or cfg.path),
                (":authority", authority or cfg.authority)] + list(extra)

    def encode(self, fields, huffman=True):
        return self.enc.encode(fields, huffman=huffman)

    def request(self, sid, fields=None, end_stream=True, **kw):
        """HEADERS (one frame) for fields (default: GET of cfg.path)."""
        return self.send(headers(sid, self.encode(fields or self.request_fields()), end_stream, **kw))

    # -- waiting ------------------------------------------------------------
    def until(self, check, expected, timeout=None):
        """Reads until check(ev) says True (done) or a string (failure); ev is a
        frame or CLOSED. Fails with expected and what was seen at the deadline."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            ev = self.next(deadline)
            if ev is None:
                raise CaseFailed("expected %s within %.1f s; saw %s" % (
                    expected, self.timeout if timeout is None else timeout, self.saw()))
            verdict = check(ev)
            if verdict is True:
                return ev
            if isinstance(verdict, str):
                raise CaseFailed(verdict)
            if ev is CLOSED:
                raise CaseFailed("expected %s; the connection closed (%s) after %s" % (
                    expected, self.closed, self.saw()))

    def expect_connection_error(self, *codes):
        """GOAWAY with one of codes, or the connection closed (RFC 9113 5.4.1:
        GOAWAY is a SHOULD). Another GOAWAY code fails."""
        def check(ev):
            if ev is CLOSED:
                self.notes.append("closed without GOAWAY")
                return True
            if ev.type == GOAWAY:
                return ev.code in codes or "GOAWAY %s, expected %s" % (error_name(ev.code), _fmt_codes(codes))
            return False
        return self.until(check, "GOAWAY %s or a close" % _fmt_codes(codes))

    def expect_stream_error(self, sid, *codes, conn_codes=()):
        """RST_STREAM on sid (None: any stream) with one of codes, or a
        connection error with one of them (or of conn_codes), or the connection
        closed (as h2spec: a stream error may be raised to a connection error)."""
        def check(ev):
            if ev is CLOSED:
                self.notes.append("connection closed instead of RST_STREAM")
                return True
            if ev.type == RST_STREAM and (sid is None or ev.sid == sid):
                return ev.code in codes or "RST_STREAM %s on stream %d, expected %s" % (
                    error_name(ev.code), ev.sid, _fmt_codes(codes))
            if ev.type == GOAWAY:
                self.notes.append("GOAWAY %s instead of RST_STREAM" % error_name(ev.code))
                return ev.code in codes + tuple(conn_codes) or "GOAWAY %s, expected RST_STREAM %s on %s" % (
                    error_name(ev.code), _fmt_codes(codes), where)
            return False
        where = "any stream" if sid is None else "stream %d" % sid
        return self.until(check, "RST_STREAM %s on %s" % (_fmt_codes(codes), where))

    def expect_malformed(self, sid, strict=False):
        """A malformed request (RFC 9113 8.1.1): a stream error PROTOCOL_ERROR and
        never a 2xx or 3xx. A 4xx/5xx answer is accepted ("a server MAY send an
        HTTP response prior to closing or resetting the stream") unless strict,
        where only RST_STREAM / GOAWAY PROTOCOL_ERROR (or a close) pass, as in h2spec."""
        answered = []

        def check(ev):
            if ev is CLOSED:
                self.notes.append("connection closed")
                return True
            if ev.type == HEADERS and ev.sid == sid and ev.fields is not None:
                st = ev.status
                if isinstance(st, int) and 100 <= st < 200:
                    return False
                if not isinstance(st, int) or st < 400:
                    return "the malformed request was answered with :status %s" % st
                answered.append(st)
                if not strict:
                    self.notes.append("answered %d" % st)
                return not strict
            if ev.type == RST_STREAM and ev.sid == sid:
                return ev.code == PROTOCOL_ERROR or "RST_STREAM %s on stream %d, expected PROTOCOL_ERROR" % (
                    error_name(ev.code), sid)
            if ev.type == GOAWAY:
                self.notes.append("GOAWAY instead of RST_STREAM")
                return ev.code == PROTOCOL_ERROR or "GOAWAY %s, expected PROTOCOL_ERROR" % error_name(ev.code)
            return False
        try:
            return self.until(check, "RST_STREAM PROTOCOL_ERROR on stream %d" % sid)
        except CaseFailed as e:
            if answered:
                raise CaseFailed("answered %s but no RST_STREAM PROTOCOL_ERROR (--strict)" % answered[0]) from e
            raise

    def expect_ping_ack(self, opaque, close_ok=False):
        def check(ev):
            if ev is CLOSED:
                return close_ok or "connection closed (%s) instead of a PING ACK" % self.closed
            if ev.type == GOAWAY:
                return close_ok or "GOAWAY %s instead of a PING ACK" % error_name(ev.code)
            if ev.type == PING and ev.ack:
                return ev.opaque == opaque or "PING ACK with %r, expected %r" % (ev.opaque, opaque)
            return False
        return self.until(check, "PING ACK %r" % opaque)

    def expect_settings_ack(self):
        have = self.settings_acks

        def check(ev):
            if ev is CLOSED or ev.type == GOAWAY:
                return "%s instead of a SETTINGS ACK" % ("close" if ev is CLOSED else ev)
            return self.settings_acks > have
        return self.until(check, "SETTINGS ACK")

    def expect_headers(self, sid):
        """The first HEADERS frame (decoded) on sid."""
        def check(ev):
            if ev is CLOSED:
                return "connection closed (%s) before HEADERS on stream %d" % (self.closed, sid)
            if ev.type == GOAWAY and ev.code != NO_ERROR:
                return "GOAWAY %s before HEADERS on stream %d" % (error_name(ev.code), sid)
            if ev.type == RST_STREAM and ev.sid == sid:
                return "RST_STREAM %s on stream %d before HEADERS" % (error_name(ev.code), sid)
            return ev.type == HEADERS and ev.sid == sid and ev.fields is not None
        return self.until(check, "HEADERS on stream %d" % sid)

    def expect_data(self, sid, nonempty=True):
        """The first DATA frame on sid (with a payload, unless nonempty=False)."""
        def check(ev):
            if ev is CLOSED:
                return "connection closed (%s) before DATA on stream %d" % (self.closed, sid)
            if ev.type == GOAWAY and ev.code != NO_ERROR:
                return "GOAWAY %s before DATA on stream %d" % (error_name(ev.code), sid)
            if ev.type == RST_STREAM and ev.sid == sid:
                return "RST_STREAM %s on stream %d before DATA" % (error_name(ev.code), sid)
            if ev.type in (HEADERS, DATA) and ev.sid == sid and ev.end_stream and not ev.data:
                raise CaseSkipped("the answer on stream %d ended without a body" % sid)
            return ev.type == DATA and ev.sid == sid and (len(ev.data) > 0 or not nonempty)
        return self.until(check, "DATA on stream %d" % sid)

    def expect_response(self, sid, timeout=None):
        """Waits for the end of the answer on sid; returns its Stream. A reset of
        it, a GOAWAY with an error or a close fail."""
        def check(ev):
            if ev is CLOSED:
                return "connection closed (%s) before the answer on stream %d ended" % (self.closed, sid)
            if ev.type == GOAWAY and ev.code != NO_ERROR:
                return "GOAWAY %s before the answer on stream %d" % (error_name(ev.code), sid)
            if ev.type == RST_STREAM and ev.sid == sid:
                return "RST_STREAM %s on stream %d" % (error_name(ev.code), sid)
            return ev is not CLOSED and ev.sid == sid and self.stream(sid).ended
        if not self.stream(sid).ended:
            self.until(check, "the answer on stream %d" % sid, timeout)
        return self.stream(sid)

    def expect_silence(self, seconds, what):
        """Nothing that ends the connection or resets a stream for seconds."""
        deadline = time.monotonic() + seconds
        while True:
            ev = self.next(deadline)
            if ev is None:
                return
            if ev is CLOSED:
                raise CaseFailed("connection closed (%s) after %s" % (self.closed, what))
            if ev.type in (GOAWAY, RST_STREAM):
                raise CaseFailed("%s after %s" % (ev, what))
