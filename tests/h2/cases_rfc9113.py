"""RFC 9113 cases, sections 3 to 8, numbered by RFC 9113's sections (h2spec
numbers by RFC 7540's: its id is kept beside each case that is one of its).

RFC 9113 dropped RFC 7540's "MUST treat as STREAM_CLOSED" for frames on a
closed stream (5.1 now says MAY, as a connection error): DATA there is still a
stream error STREAM_CLOSED by 6.1, and HEADERS reusing a closed stream's id is
also an unexpected stream identifier (5.1.1, PROTOCOL_ERROR), so both pass.

A connection error passes on GOAWAY with the code or on a close (GOAWAY is a
SHOULD, 5.4.1); a stream error on RST_STREAM with the code, or a connection
error with it, or a close (as h2spec). A GOAWAY or RST_STREAM with another code
fails: the rule names the code.
"""
from h2cases import CaseFailed, case, fail, skip
from h2conn import (
    CLOSED, COMPRESSION_ERROR, DATA, END_HEADERS, END_STREAM, ENABLE_PUSH,
    FLOW_CONTROL_ERROR, FRAME_SIZE_ERROR, GOAWAY, HEADERS, INITIAL_WINDOW_SIZE,
    MAX_CONCURRENT_STREAMS, MAX_FRAME_SIZE, PADDED, PING, PREFACE, PRIORITY, PROTOCOL_ERROR,
    REFUSED_STREAM, RST_STREAM, SETTINGS, STREAM_CLOSED, WINDOW_UPDATE, continuation, data,
    frame, goaway, headers, hp_literal, ping, priority, push_promise, rst_stream, settings,
    window_update)


def post(c, extra=(), path=None):
    """POST to --post-path (a resource that reads request bodies)."""
    return c.request_fields("POST", path or c.cfg.post_path, extra)


def dummy_block(n, size=16, tag="x-dummy"):
    """n literal fields without indexing (no decoder state), size-byte values."""
    return b"".join(hp_literal("%s%d" % (tag, i), "x" * size) for i in range(n))


def ping_ok(c, opaque=b"h2suite!"):
    """Sends a PING and wants its ACK: the server read what came before and is fine."""
    c.send(ping(opaque))
    c.expect_ping_ack(opaque)


# --- 3.4 HTTP/2 Connection Preface ----------------------------------------

@case("3.4/1", "The server's connection preface is a SETTINGS frame, the first frame it sends (MUST)",
      "http2/3.5/1")
def preface_settings_first(t):
    c = t.conn(handshake=False)
    c.send(PREFACE + settings())
    f = c.until(lambda ev: True, "a frame")
    if f is CLOSED:
        fail("connection closed (%s) without a frame" % c.closed)
    if f.type != SETTINGS or f.ack:
        fail("first frame is %s, not SETTINGS" % f)


@case("3.4/2", "An invalid connection preface is a connection error PROTOCOL_ERROR (MUST)", "http2/3.5/2")
def preface_invalid(t):
    c = t.conn(handshake=False)
    c.send(b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n" + settings())
    c.expect_connection_error(PROTOCOL_ERROR)


# --- 4.1 Frame Format -------------------------------------------------------

@case("4.1/1", "A frame of unknown type is ignored (MUST)", "http2/4.1/1")
def unknown_type(t):
    c = t.conn()
    c.send(frame(0xFF, 0, 0, b"\0" * 8))
    ping_ok(c)


@case("4.1/2", "Undefined flags are ignored (MUST)", "http2/4.1/2")
def undefined_flags(t):
    c = t.conn()
    c.send(frame(PING, 0x16, 0, b"flagged!"))
    c.expect_ping_ack(b"flagged!")


@case("4.1/3", "The reserved bit of the stream identifier is ignored (MUST)", "http2/4.1/3")
def reserved_bit(t):
    c = t.conn()
    c.send(frame(PING, 0, 0, b"reserved", reserved=True))
    c.expect_ping_ack(b"reserved")


# --- 4.2 Frame Size ---------------------------------------------------------

def _max_frame(c):
    n = c.peer[MAX_FRAME_SIZE]
    if n >= (1 << 24) - 1:
        skip("the server's SETTINGS_MAX_FRAME_SIZE is 2^24-1: no frame can exceed it")
    return n


@case("4.2/1", "A DATA frame of 2^14 octets is received and processed (MUST)", "http2/4.2/1")
def data_max_size(t):
    c = t.conn()
    n = 16384
    if c.peer[INITIAL_WINDOW_SIZE] < n:
        skip("the server's initial window (%d) is below 2^14" % c.peer[INITIAL_WINDOW_SIZE])
    c.request(1, post(c), end_stream=False)
    c.send(data(1, b"x" * n, end_stream=True))
    c.expect_headers(1)


@case("4.2/2", "A DATA frame above SETTINGS_MAX_FRAME_SIZE is a FRAME_SIZE_ERROR (MUST)", "http2/4.2/2")
def data_too_large(t):
    c = t.conn()
    n = _max_frame(c) + 1
    c.request(1, post(c), end_stream=False)
    c.send(data(1, b"x" * n, end_stream=True))
    c.expect_stream_error(1, FRAME_SIZE_ERROR)


@case("4.2/3", "A HEADERS frame above SETTINGS_MAX_FRAME_SIZE is a connection error FRAME_SIZE_ERROR (MUST)",
      "http2/4.2/3")
def headers_too_large(t):
    c = t.conn()
    n = _max_frame(c) + 1
    block = c.encode(c.request_fields())
    block += dummy_block(n // 1000 + 1, 1000)
    c.send(headers(1, block))
    c.expect_connection_error(FRAME_SIZE_ERROR)


# --- 4.3 Field Section Compression and Decompression ----------------------

@case("4.3/1", "A field block that cannot be decoded is a connection error COMPRESSION_ERROR (MUST)",
      "http2/4.3/1")
def undecodable_block(t):
    c = t.conn()
    c.send(headers(1, b"\x40"))  # literal with indexing, no name, no value
    c.expect_connection_error(COMPRESSION_ERROR)


@case("4.3/2", "A PRIORITY frame inside a field block is a connection error PROTOCOL_ERROR (MUST)",
      "http2/4.3/2")
def priority_inside_block(t):
    c = t.conn()
    c.send(headers(1, c.encode(c.request_fields()), end_headers=False),
           priority(1, 0, 16), continuation(1, dummy_block(1)))
    c.expect_connection_error(PROTOCOL_ERROR)


@case("4.3/3", "HEADERS on another stream inside a field block is a connection error PROTOCOL_ERROR (MUST)",
      "http2/4.3/3")
def headers_inside_block(t):
    c = t.conn()
    c.send(headers(1, c.encode(c.request_fields()), end_headers=False),
           headers(3, c.encode(c.request_fields())), continuation(1, dummy_block(1)))
    c.expect_connection_error(PROTOCOL_ERROR)


@case("4.3/4", "The field block of a stream refused for concurrency still updates the decoder: a later "
      "request that uses its entries is answered (MUST)")
def refused_stream_block_decoded(t):
    c = t.conn((INITIAL_WINDOW_SIZE, 0))  # answers wait on the window: streams stay open
    n = c.peer_sent.get(MAX_CONCURRENT_STREAMS)
    if n is None or n > 1000:
        skip("the server advertises %s concurrent streams" % ("no limit on" if n is None else n))
    c.send(*[headers(2 * i + 1, c.encode(c.request_fields())) for i in range(n)])
    extra = 2 * n + 1
    c.request(extra, c.request_fields(extra=[("x-state", "kept-%d" % n)]))  # x-state: indexed
    ev = c.expect_stream_error(extra, REFUSED_STREAM, PROTOCOL_ERROR)
    if ev is CLOSED or ev.type == GOAWAY:
        skip("the stream beyond the limit ended the connection: nothing to check")
    c.send(rst_stream(1))  # a slot for the next one
    c.request(extra + 2, c.request_fields(extra=[("x-state", "kept-%d" % n)]))  # refers to the entry
    c.send(window_update(extra + 2, 1 << 16))  # a server may hold HEADERS back until DATA can go
    f = c.expect_headers(extra + 2)
    if f.status != 200:
        fail("stream %d answered %s, expected 200" % (extra + 2, f.status))


@case("4.3/5", "The field block of a malformed (reset) request still updates the decoder: a next request "
      "that uses its entries is answered (MUST)")
def malformed_block_decoded(t):
    c = t.conn()
    # te: gzip makes stream 1 malformed (8.2.2); x-state is indexed in both tables.
    c.request(1, c.request_fields(extra=[("x-state", "kept"), ("te", "gzip")]))
    c.request(3, c.request_fields(extra=[("x-state", "kept")]))
    try:
        st = c.expect_response(3)
    except CaseFailed:
        if c.goaway is not None and c.goaway.code == PROTOCOL_ERROR and c.goaway.last_sid < 3:
            skip("the malformed request was a connection error (5.4.1 allows it): nothing to check")
        raise
    if st.final_status() != 200:
        fail("stream 3 answered %s, expected 200" % st.statuses())


# --- 5.1 Stream States ------------------------------------------------------

@case("5.1/1", "idle: DATA is a connection error PROTOCOL_ERROR (MUST)", "http2/5.1/1")
def idle_data(t):
    c = t.conn()
    c.send(data(1, b"test", end_stream=True))
    c.expect_connection_error(PROTOCOL_ERROR)


@case("5.1/2", "idle: RST_STREAM is a connection error PROTOCOL_ERROR (MUST)", "http2/5.1/2")
def idle_rst(t):
    c = t.conn()
    c.send(rst_stream(1))
    c.expect_connection_error(PROTOCOL_ERROR)


@case("5.1/3", "idle: WINDOW_UPDATE is a connection error PROTOCOL_ERROR (MUST)", "http2/5.1/3")
def idle_window_update(t):
    c = t.conn()
    c.send(window_update(1, 100))
    c.expect_connection_error(PROTOCOL_ERROR)


@case("5.1/4", "idle: CONTINUATION is a connection error PROTOCOL_ERROR (MUST)", "http2/5.1/4")
def idle_continuation(t):
    c = t.conn()
    c.send(continuation(1, c.encode(c.request_fields())))
    c.expect_connection_error(PROTOCOL_ERROR)


@case("5.1/5", "half-closed (remote): DATA is a stream error STREAM_CLOSED (MUST)", "http2/5.1/5")
def half_closed_data(t):
    c = t.conn()
    c.request(1)
    c.send(data(1, b"test", end_stream=True))
    c.expect_stream_error(1, STREAM_CLOSED)


@case("5.1/6", "half-closed (remote): HEADERS is a stream error STREAM_CLOSED (MUST)", "http2/5.1/6")
def half_closed_headers(t):
    c = t.conn()
    c.request(1)
    c.request(1)
    c.expect_stream_error(1, STREAM_CLOSED)


@case("5.1/7", "half-closed (remote): CONTINUATION is a stream error STREAM_CLOSED (or PROTOCOL_ERROR) (MUST)",
      "http2/5.1/7")
def half_closed_continuation(t):
    c = t.conn()
    c.request(1)
    c.send(continuation(1, dummy_block(1)))
    c.expect_stream_error(1, STREAM_CLOSED, PROTOCOL_ERROR)


@case("5.1/8", "closed by the client's RST_STREAM: DATA is a stream error STREAM_CLOSED (6.1, MUST)",
      "http2/5.1/8")
def closed_rst_data(t):
    c = t.conn()
    c.request(1, post(c), end_stream=False)
    c.send(rst_stream(1), data(1, b"test", end_stream=True))
    c.expect_stream_error(1, STREAM_CLOSED)


@case("5.1/9", "closed by the client's RST_STREAM: HEADERS reusing the stream is an error STREAM_CLOSED "
      "(5.1), or a connection error PROTOCOL_ERROR (5.1.1) (MUST)", "http2/5.1/9")
def closed_rst_headers(t):
    c = t.conn()
    c.request(1, post(c), end_stream=False)
    c.send(rst_stream(1))
    c.request(1)
    c.expect_stream_error(1, STREAM_CLOSED, conn_codes=(PROTOCOL_ERROR,))


@case("5.1/10", "closed by the client's RST_STREAM: CONTINUATION is a stream error STREAM_CLOSED "
      "(or PROTOCOL_ERROR) (MUST)", "http2/5.1/10")
def closed_rst_continuation(t):
    c = t.conn()
    c.request(1, post(c), end_stream=False)
    c.send(rst_stream(1), continuation(1, dummy_block(1)))
    c.expect_stream_error(1, STREAM_CLOSED, PROTOCOL_ERROR)


def _closed_stream(t):
    c = t.conn()
    c.request(1)
    c.expect_response(1)
    return c


@case("5.1/11", "closed (both ends sent END_STREAM): DATA is a stream error STREAM_CLOSED (6.1, MUST)",
      "http2/5.1/11")
def closed_data(t):
    c = _closed_stream(t)
    c.send(data(1, b"test", end_stream=True))
    c.expect_stream_error(1, STREAM_CLOSED)


@case("5.1/12", "closed (both ends sent END_STREAM): HEADERS reusing the stream is an error STREAM_CLOSED "
      "(5.1), or a connection error PROTOCOL_ERROR (5.1.1) (MUST)", "http2/5.1/12")
def closed_headers(t):
    c = _closed_stream(t)
    c.request(1)
    c.expect_stream_error(1, STREAM_CLOSED, conn_codes=(PROTOCOL_ERROR,))


@case("5.1/13", "closed (both ends sent END_STREAM): CONTINUATION is a connection error STREAM_CLOSED "
      "(or PROTOCOL_ERROR) (MUST)", "http2/5.1/13")
def closed_continuation(t):
    c = _closed_stream(t)
    c.send(continuation(1, dummy_block(1)))
    c.expect_connection_error(STREAM_CLOSED, PROTOCOL_ERROR)


@case("5.1/14", "half-closed (remote): WINDOW_UPDATE, PRIORITY and RST_STREAM are accepted (MUST)")
def half_closed_allowed(t):
    c = t.conn((INITIAL_WINDOW_SIZE, 0))  # the answer cannot end: the stream stays half-closed (remote)
    c.request(1)
    c.send(priority(1, 0, 32), window_update(1, 1))
    f = c.expect_data(1)
    if len(f.data) != 1:
        fail("DATA of %d octets in a window of 1" % len(f.data))
    c.send(rst_stream(1))
    ping_ok(c)


@case("5.1/15", "idle: PRIORITY is accepted and does not open the stream: a lower stream id is still "
      "usable (MUST)")
def idle_priority(t):
    c = t.conn()
    c.send(priority(5, 0, 16))
    c.request(3)
    c.expect_response(3)


# --- 5.1.1 Stream Identifiers ----------------------------------------------

@case("5.1.1/1", "An even-numbered stream opened by the client is a connection error PROTOCOL_ERROR (MUST)",
      "http2/5.1.1/1")
def even_stream(t):
    c = t.conn()
    c.request(2)
    c.expect_connection_error(PROTOCOL_ERROR)


@case("5.1.1/2", "A stream id lower than one already opened is a connection error PROTOCOL_ERROR "
      "(or STREAM_CLOSED, 5.1) (MUST)",
      "http2/5.1.1/2")
def decreasing_stream(t):
    c = t.conn()
    c.request(5)
    c.request(3)
    # Opening 5 closed 3 (5.1.1), and 5.1 lets a frame on a closed stream be a
    # connection error STREAM_CLOSED: accepted too (h2spec takes only PROTOCOL_ERROR).
    ev = c.expect_connection_error(PROTOCOL_ERROR, STREAM_CLOSED)
    if ev is not CLOSED and ev.code == STREAM_CLOSED:
        t.note("GOAWAY STREAM_CLOSED (stream 3 was implicitly closed)")


# --- 5.1.2 Stream Concurrency ----------------------------------------------

@case("5.1.2/1", "Streams beyond SETTINGS_MAX_CONCURRENT_STREAMS are a stream error PROTOCOL_ERROR or "
      "REFUSED_STREAM (MUST)", "http2/5.1.2/1")
def concurrency_exceeded(t):
    c = t.conn((INITIAL_WINDOW_SIZE, 0))  # answers wait for window: streams stay open
    n = c.peer_sent.get(MAX_CONCURRENT_STREAMS)
    if n is None or n > 1000:
        skip("the server advertises %s concurrent streams" % ("no limit on" if n is None else n))
    c.send(*[headers(2 * i + 1, c.encode(c.request_fields())) for i in range(n + 1)])
    c.expect_stream_error(None, PROTOCOL_ERROR, REFUSED_STREAM)


# --- 5.3.1 Stream Dependencies ---------------------------------------------

@case("5.3.1/1", "HEADERS that depends on its own stream is a stream error PROTOCOL_ERROR (MUST)",
      "http2/5.3.1/1")
def headers_self_dependency(t):
    c = t.conn()
    c.send(headers(1, c.encode(c.request_fields()), priority=(1, 16, False)))
    c.expect_stream_error(1, PROTOCOL_ERROR)


@case("5.3.1/2", "PRIORITY that depends on its own stream is a stream error PROTOCOL_ERROR (MUST)",
      "http2/5.3.1/2")
def priority_self_dependency(t):
    c = t.conn()
    c.request(1, post(c), end_stream=False)
    c.send(priority(1, 1, 16))
    c.expect_stream_error(1, PROTOCOL_ERROR)


# --- 5.4.1 Connection Error Handling ---------------------------------------

@case("5.4.1/1", "After a connection error the server closes the TCP connection (MUST)", "http2/5.4.1/1")
def conn_error_closes(t):
    c = t.conn()
    c.send(frame(PING, 0, 3, b"\0" * 8))  # PING on a stream: connection error
    c.until(lambda ev: ev is CLOSED, "the connection closed")


@case("5.4.1/2", "A connection error is announced by GOAWAY before the close (SHOULD; h2spec --strict)",
      "http2/5.4.1/2")
def conn_error_goaway(t):
    c = t.conn()
    c.send(frame(PING, 0, 3, b"\0" * 8))
    c.until(lambda ev: ev is not CLOSED and ev.type == GOAWAY, "GOAWAY")


# --- 5.5 Extending HTTP/2 ---------------------------------------------------

@case("5.5/1", "An unknown extension frame is ignored (MUST)", "http2/5.5/1")
def extension_frame(t):
    c = t.conn()
    c.send(frame(0x16, 0, 0, b"\0" * 8))
    ping_ok(c)


@case("5.5/2", "An unknown extension frame inside a field block is a connection error PROTOCOL_ERROR (MUST)",
      "http2/5.5/2")
def extension_inside_block(t):
    c = t.conn()
    c.send(headers(1, c.encode(c.request_fields()), end_headers=False), frame(0x16, 0, 0, b"\0" * 8),
           continuation(1, dummy_block(1)))
    c.expect_connection_error(PROTOCOL_ERROR)


# --- 6.1 DATA -----------------------------------------------------------------

@case("6.1/1", "DATA on stream 0 is a connection error PROTOCOL_ERROR (MUST)", "http2/6.1/1")
def data_stream0(t):
    c = t.conn()
    c.send(data(0, b"test", end_stream=True))
    c.expect_connection_error(PROTOCOL_ERROR)


@case("6.1/2", "DATA on a stream not open or half-closed (local) is a stream error STREAM_CLOSED (MUST)",
      "http2/6.1/2")
def data_not_open(t):
    c = t.conn()
    c.request(1)
    c.send(data(1, b"test", end_stream=True))
    c.expect_stream_error(1, STREAM_CLOSED)


@case("6.1/3", "DATA whose padding is not shorter than its payload is a connection error PROTOCOL_ERROR (MUST)",
      "http2/6.1/3")
def data_bad_padding(t):
    c = t.conn()
    c.request(1, post(c), end_stream=False)
    c.send(frame(DATA, PADDED | END_STREAM, 1, b"\x06test"))
    c.expect_connection_error(PROTOCOL_ERROR)


@case("6.1/4", "Padded DATA is accepted; the padding is not content (MUST)")
def data_padded(t):
    c = t.conn()
    c.request(1, post(c, [("content-length", "4")]), end_stream=False)
    c.send(data(1, b"test", end_stream=True, pad=32))
    st = c.expect_response(1)
    if st.final_status() is None:
        fail("no final status: %s" % st.statuses())


# --- 6.2 HEADERS --------------------------------------------------------------

@case("6.2/1", "HEADERS without END_HEADERS followed by PRIORITY is a connection error PROTOCOL_ERROR (MUST)",
      "http2/6.2/1")
def headers_then_priority(t):
    c = t.conn()
    c.send(headers(1, c.encode(c.request_fields()), end_headers=False), priority(3, 0, 16))
    c.expect_connection_error(PROTOCOL_ERROR)


@case("6.2/2", "HEADERS on another stream while a field block is open is a connection error "
      "PROTOCOL_ERROR (MUST)", "http2/6.2/2")
def headers_interleaved(t):
    c = t.conn()
    c.send(headers(1, c.encode(c.request_fields()), end_headers=False),
           headers(3, c.encode(c.request_fields()), end_headers=False))
    c.expect_connection_error(PROTOCOL_ERROR)


@case("6.2/3", "HEADERS on stream 0 is a connection error PROTOCOL_ERROR (MUST)", "http2/6.2/3")
def headers_stream0(t):
    c = t.conn()
    c.send(headers(0, c.encode(c.request_fields())))
    c.expect_connection_error(PROTOCOL_ERROR)


@case("6.2/4", "HEADERS whose padding exceeds the field block is a connection error PROTOCOL_ERROR (MUST)",
      "http2/6.2/4")
def headers_bad_padding(t):
    c = t.conn()
    block = c.encode(c.request_fields())
    c.send(frame(HEADERS, PADDED | END_HEADERS | END_STREAM, 1, bytes([len(block) + 1]) + block))
    c.expect_connection_error(PROTOCOL_ERROR)


@case("6.2/5", "HEADERS with padding and priority fields is accepted (MUST)")
def headers_padded_priority(t):
    c = t.conn()
    c.send(headers(1, c.encode(c.request_fields()), pad=17, priority=(0, 200, False)))
    st = c.expect_response(1)
    if st.final_status() != 200:
        fail("answered %s, expected 200" % st.statuses())


# --- 6.3 PRIORITY ------------------------------------------------------------

@case("6.3/1", "PRIORITY on stream 0 is a connection error PROTOCOL_ERROR (MUST)", "http2/6.3/1")
def priority_stream0(t):
    c = t.conn()
    c.send(priority(0, 1, 16))
    c.expect_connection_error(PROTOCOL_ERROR)


@case("6.3/2", "PRIORITY with a length other than 5 is a stream error FRAME_SIZE_ERROR (MUST)", "http2/6.3/2")
def priority_bad_length(t):
    c = t.conn()
    c.request(1, post(c), end_stream=False)
    c.send(frame(PRIORITY, 0, 1, b"\0\0\0\0"))
    c.expect_stream_error(1, FRAME_SIZE_ERROR)


# --- 6.4 RST_STREAM ----------------------------------------------------------

@case("6.4/1", "RST_STREAM on stream 0 is a connection error PROTOCOL_ERROR (MUST)", "http2/6.4/1")
def rst_stream0(t):
    c = t.conn()
    c.send(rst_stream(0))
    c.expect_connection_error(PROTOCOL_ERROR)


@case("6.4/2", "RST_STREAM on an idle stream is a connection error PROTOCOL_ERROR (MUST)", "http2/6.4/2")
def rst_idle(t):
    c = t.conn()
    c.send(rst_stream(1))
    c.expect_connection_error(PROTOCOL_ERROR)


@case("6.4/3", "RST_STREAM with a length other than 4 is a connection error FRAME_SIZE_ERROR (MUST)",
      "http2/6.4/3")
def rst_bad_length(t):
    c = t.conn()
    c.request(1, post(c), end_stream=False)
    c.send(frame(RST_STREAM, 0, 1, b"\0\0\0"))
    c.expect_connection_error(FRAME_SIZE_ERROR)


# --- 6.5 SETTINGS ------------------------------------------------------------

@case("6.5/1", "SETTINGS with ACK and a payload is a connection error FRAME_SIZE_ERROR (MUST)", "http2/6.5/1")
def settings_ack_payload(t):
    c = t.conn()
    c.send(frame(SETTINGS, 0x1, 0, b"\0\x04\0\0\0\x01"))
    c.expect_connection_error(FRAME_SIZE_ERROR)


@case("6.5/2", "SETTINGS on a stream other than 0 is a connection error PROTOCOL_ERROR (MUST)", "http2/6.5/2")
def settings_stream(t):
    c = t.conn()
    c.send(settings((INITIAL_WINDOW_SIZE, 100), sid=1))
    c.expect_connection_error(PROTOCOL_ERROR)


@case("6.5/3", "SETTINGS whose length is not a multiple of 6 is a connection error FRAME_SIZE_ERROR (MUST)",
      "http2/6.5/3")
def settings_bad_length(t):
    c = t.conn()
    c.send(frame(SETTINGS, 0, 0, b"\0\x04\0"))
    c.expect_connection_error(FRAME_SIZE_ERROR)


@case("6.5.2/1", "SETTINGS_ENABLE_PUSH other than 0 or 1 is a connection error PROTOCOL_ERROR (MUST)",
      "http2/6.5.2/1")
def settings_enable_push(t):
    c = t.conn()
    c.send(settings((ENABLE_PUSH, 2)))
    c.expect_connection_error(PROTOCOL_ERROR)


@case("6.5.2/2", "SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1 is a connection error FLOW_CONTROL_ERROR (MUST)",
      "http2/6.5.2/2")
def settings_window_too_large(t):
    c = t.conn()
    c.send(settings((INITIAL_WINDOW_SIZE, 1 << 31)))
    c.expect_connection_error(FLOW_CONTROL_ERROR)


@case("6.5.2/3", "SETTINGS_MAX_FRAME_SIZE below 2^14 is a connection error PROTOCOL_ERROR (MUST)",
      "http2/6.5.2/3")
def settings_frame_too_small(t):
    c = t.conn()
    c.send(settings((MAX_FRAME_SIZE, 16383)))
    c.expect_connection_error(PROTOCOL_ERROR)


@case("6.5.2/4", "SETTINGS_MAX_FRAME_SIZE above 2^24-1 is a connection error PROTOCOL_ERROR (MUST)",
      "http2/6.5.2/4")
def settings_frame_too_large(t):
    c = t.conn()
    c.send(settings((MAX_FRAME_SIZE, 1 << 24)))
    c.expect_connection_error(PROTOCOL_ERROR)


@case("6.5.2/5", "A SETTINGS parameter with an unknown identifier is ignored (MUST)", "http2/6.5.2/5")
def settings_unknown(t):
    c = t.conn()
    c.send(settings((0xFF, 1)))
    c.expect_settings_ack()


@case("6.5.3/1", "The values of one SETTINGS frame are processed in order (MUST)", "http2/6.5.3/1")
def settings_in_order(t):
    c = t.conn()
    c.send(settings((INITIAL_WINDOW_SIZE, 100), (INITIAL_WINDOW_SIZE, 1)))
    c.expect_settings_ack()
    c.request(1)
    f = c.expect_data(1)
    if len(f.data) != 1:
        fail("DATA of %d octets, expected 1 (the last INITIAL_WINDOW_SIZE)" % len(f.data))


@case("6.5.3/2", "SETTINGS without ACK is acknowledged by a SETTINGS frame with ACK (MUST)", "http2/6.5.3/2")
def settings_acked(t):
    c = t.conn()
    c.send(settings())
    c.expect_settings_ack()


# --- 6.7 PING -----------------------------------------------------------------

@case("6.7/1", "PING is answered by a PING with ACK and the same payload (MUST)", "http2/6.7/1")
def ping_answered(t):
    ping_ok(t.conn(), b"\x00\xffpong\x01\x02")


@case("6.7/2", "A PING with ACK is not answered (MUST NOT)", "http2/6.7/2")
def ping_ack_not_answered(t):
    c = t.conn()
    c.send(ping(b"unwanted", ack=True))
    ping_ok(c, b"expected")


@case("6.7/3", "PING on a stream other than 0 is a connection error PROTOCOL_ERROR (MUST)", "http2/6.7/3")
def ping_stream(t):
    c = t.conn()
    c.send(ping(sid=1))
    c.expect_connection_error(PROTOCOL_ERROR)


@case("6.7/4", "PING with a length other than 8 is a connection error FRAME_SIZE_ERROR (MUST)", "http2/6.7/4")
def ping_bad_length(t):
    c = t.conn()
    c.send(frame(PING, 0, 0, b"\0" * 6))
    c.expect_connection_error(FRAME_SIZE_ERROR)


# --- 6.8 GOAWAY ---------------------------------------------------------------

@case("6.8/1", "GOAWAY on a stream other than 0 is a connection error PROTOCOL_ERROR (MUST)", "http2/6.8/1")
def goaway_stream(t):
    c = t.conn()
    c.send(goaway(0, sid=1))
    c.expect_connection_error(PROTOCOL_ERROR)


# --- 6.9 WINDOW_UPDATE ---------------------------------------------------------

@case("6.9/1", "WINDOW_UPDATE of 0 on the connection is a connection error PROTOCOL_ERROR (MUST)",
      "http2/6.9/1")
def window_zero_conn(t):
    c = t.conn()
    c.send(window_update(0, 0))
    c.expect_connection_error(PROTOCOL_ERROR)


@case("6.9/2", "WINDOW_UPDATE of 0 on a stream is a stream error PROTOCOL_ERROR (MUST)", "http2/6.9/2")
def window_zero_stream(t):
    c = t.conn()
    c.request(1, post(c), end_stream=False)
    c.send(window_update(1, 0))
    c.expect_stream_error(1, PROTOCOL_ERROR)


@case("6.9/3", "WINDOW_UPDATE with a length other than 4 is a connection error FRAME_SIZE_ERROR (MUST)",
      "http2/6.9/3")
def window_bad_length(t):
    c = t.conn()
    c.send(frame(WINDOW_UPDATE, 0, 0, b"\0\0\x01"))
    c.expect_connection_error(FRAME_SIZE_ERROR)


@case("6.9.1/1", "DATA never exceeds the flow-control window (INITIAL_WINDOW_SIZE 1: DATA of 1) (MUST NOT)",
      "http2/6.9.1/1")
def window_respected(t):
    c = t.conn()
    c.send(settings((INITIAL_WINDOW_SIZE, 1)))
    c.expect_settings_ack()
    c.request(1)
    f = c.expect_data(1)
    if len(f.data) != 1:
        fail("DATA of %d octets in a window of 1" % len(f.data))


@case("6.9.1/2", "A connection window above 2^31-1 is answered by GOAWAY FLOW_CONTROL_ERROR (MUST)",
      "http2/6.9.1/2")
def window_overflow_conn(t):
    c = t.conn()
    c.send(window_update(0, 0x7FFFFFFF), window_update(0, 0x7FFFFFFF))

    def check(ev):
        if ev is CLOSED:
            return "connection closed (%s) without GOAWAY" % c.closed
        if ev.type == GOAWAY:
            return ev.code == FLOW_CONTROL_ERROR or "%s, expected FLOW_CONTROL_ERROR" % ev
        return False
    c.until(check, "GOAWAY FLOW_CONTROL_ERROR")


@case("6.9.1/3", "A stream window above 2^31-1 is answered by RST_STREAM FLOW_CONTROL_ERROR (MUST)",
      "http2/6.9.1/3")
def window_overflow_stream(t):
    c = t.conn()
    c.request(1, post(c), end_stream=False)
    c.send(window_update(1, 0x7FFFFFFF), window_update(1, 0x7FFFFFFF))

    def check(ev):
        if ev is CLOSED or ev.type == GOAWAY:
            return "%s instead of RST_STREAM FLOW_CONTROL_ERROR on stream 1" % (
                "close (%s)" % c.closed if ev is CLOSED else ev)
        if ev.type == RST_STREAM and ev.sid == 1:
            return ev.code == FLOW_CONTROL_ERROR or "%s, expected FLOW_CONTROL_ERROR" % ev
        return False
    c.until(check, "RST_STREAM FLOW_CONTROL_ERROR on stream 1")


@case("6.9.2/1", "A new SETTINGS_INITIAL_WINDOW_SIZE adjusts the windows of open streams (MUST)",
      "http2/6.9.2/1")
def window_adjusted(t):
    c = t.conn()
    c.send(settings((INITIAL_WINDOW_SIZE, 0)))
    c.expect_settings_ack()
    c.request(1)
    c.send(settings((INITIAL_WINDOW_SIZE, 1)))
    f = c.expect_data(1)
    if len(f.data) != 1:
        fail("DATA of %d octets after the window became 1" % len(f.data))


@case("6.9.2/2", "A window made negative by SETTINGS is tracked: no DATA until it is positive again (MUST)",
      "http2/6.9.2/2")
def window_negative(t):
    c = t.conn()
    c.send(settings((INITIAL_WINDOW_SIZE, 3)))
    c.expect_settings_ack()
    c.request(1)
    f = c.expect_data(1)
    if len(f.data) != 3:
        skip("first DATA of %d octets: the body is shorter than 5 octets or split" % len(f.data))
    c.send(settings((INITIAL_WINDOW_SIZE, 2)))  # window 2 - 3 = -1
    c.expect_settings_ack()
    c.send(window_update(1, 2))  # -1 + 2 = 1
    f = c.expect_data(1)
    if len(f.data) != 1:
        fail("DATA of %d octets with a window of 1 (the window was -1, then +2)" % len(f.data))


@case("6.9.2/3", "SETTINGS_INITIAL_WINDOW_SIZE of 2^31 is a connection error FLOW_CONTROL_ERROR (MUST)",
      "http2/6.9.2/3")
def window_setting_overflow(t):
    c = t.conn()
    c.send(frame(SETTINGS, 0, 0, b"\0\x04\x80\0\0\0"))
    c.expect_connection_error(FLOW_CONTROL_ERROR)


# --- 6.10 CONTINUATION -----------------------------------------------------

@case("6.10/1", "A field block in HEADERS and several CONTINUATION frames is accepted (MUST)", "http2/6.10/1")
def continuations_accepted(t):
    c = t.conn()
    c.send(headers(1, c.encode(c.request_fields()), end_headers=False),
           continuation(1, dummy_block(2, tag="x-a"), end_headers=False),
           continuation(1, dummy_block(2, tag="x-b")))
    c.expect_headers(1)


@case("6.10/2", "A frame other than CONTINUATION inside a field block is a connection error PROTOCOL_ERROR "
      "(MUST)", "http2/6.10/2")
def continuation_interrupted(t):
    c = t.conn()
    c.send(headers(1, c.encode(post(c)), end_stream=False, end_headers=False),
           continuation(1, dummy_block(1), end_headers=False), data(1, b"test", end_stream=True))
    c.expect_connection_error(PROTOCOL_ERROR)


@case("6.10/3", "CONTINUATION on stream 0 is a connection error PROTOCOL_ERROR (MUST)", "http2/6.10/3")
def continuation_stream0(t):
    c = t.conn()
    c.send(headers(1, c.encode(c.request_fields()), end_headers=False), continuation(0, dummy_block(1)))
    c.expect_connection_error(PROTOCOL_ERROR)


@case("6.10/4", "CONTINUATION after HEADERS with END_HEADERS is a connection error PROTOCOL_ERROR (MUST)",
      "http2/6.10/4")
def continuation_after_end_headers(t):
    c = t.conn()
    c.send(headers(1, c.encode(post(c)), end_stream=False), continuation(1, dummy_block(1)))
    c.expect_connection_error(PROTOCOL_ERROR)


@case("6.10/5", "CONTINUATION after a CONTINUATION with END_HEADERS is a connection error PROTOCOL_ERROR "
      "(MUST)", "http2/6.10/5")
def continuation_after_continuation_end(t):
    c = t.conn()
    c.send(headers(1, c.encode(post(c)), end_stream=False, end_headers=False),
           continuation(1, dummy_block(1, tag="x-a")), continuation(1, dummy_block(1, tag="x-b")))
    c.expect_connection_error(PROTOCOL_ERROR)


@case("6.10/6", "CONTINUATION after DATA is a connection error PROTOCOL_ERROR (MUST)", "http2/6.10/6")
def continuation_after_data(t):
    c = t.conn()
    c.request(1, post(c), end_stream=False)
    c.send(data(1, b"test"), continuation(1, dummy_block(1)))
    c.expect_connection_error(PROTOCOL_ERROR)


# --- 7 Error Codes --------------------------------------------------------------

@case("7/1", "GOAWAY with an unknown error code triggers no special behaviour (MUST NOT)", "http2/7/1")
def goaway_unknown_code(t):
    c = t.conn()
    c.send(goaway(0, 0xFF), ping(b"after-ga"))
    c.expect_ping_ack(b"after-ga", close_ok=True)  # the server may end a connection we said goodbye on


@case("7/2", "RST_STREAM with an unknown error code triggers no special behaviour (MUST NOT)", "http2/7/2")
def rst_unknown_code(t):
    c = t.conn()
    c.request(1, post(c), end_stream=False)
    c.send(rst_stream(1, 0xFF))
    ping_ok(c)


# --- 8.1 HTTP Message Framing ---------------------------------------------

@case("8.1/1", "A second HEADERS without END_STREAM (trailers that do not end the stream) is malformed: "
      "stream error PROTOCOL_ERROR (MUST)", "http2/8.1/1")
def trailers_without_end_stream(t):
    c = t.conn()
    c.request(1, post(c), end_stream=False)
    c.send(data(1, b"test"), headers(1, c.encode([("x-trailer", "ok")]), end_stream=False))
    c.expect_malformed(1, t.cfg.strict)


@case("8.1/2", "A valid GET is answered with :status 200 and a complete response")
def valid_get(t):
    c = t.conn()
    c.request(1)
    st = c.expect_response(1)
    if st.final_status() != 200:
        fail("answered %s, expected 200" % st.statuses())
    t.note("%d body octets" % len(st.data))


@case("8.1/3", "Trailers in a request are accepted: answered as the same request without them (MUST)")
def request_trailers(t):
    c = t.conn()
    c.request(1, post(c), end_stream=False)
    c.send(data(1, b"test", end_stream=True))
    plain = c.expect_response(1).final_status()
    c.request(3, post(c), end_stream=False)
    c.send(data(3, b"test"), headers(3, c.encode([("x-trailer", "ok")]), end_stream=True))
    with_trailers = c.expect_response(3).final_status()
    if with_trailers != plain:
        fail("answered %s with trailers, %s without" % (with_trailers, plain))
    t.note("both answered %s" % plain)


@case("8.1/4", "Expect: 100-continue gets 100 (Continue) before the final status when the body is awaited "
      "(RFC 9110 10.1.1, MUST)")
def expect_continue(t):
    c = t.conn()
    c.request(1, post(c, [("content-length", "4"), ("expect", "100-continue")]), end_stream=False)
    try:
        f = c.expect_headers(1)
    except CaseFailed as e:
        raise CaseFailed("%s: the server neither sent 100 (Continue) nor decided without the body" % e) from e
    if f.status == 100:
        c.send(data(1, b"test", end_stream=True))
        st = c.expect_response(1)
        t.note("100, then %s" % st.final_status())
    elif isinstance(f.status, int) and f.status >= 200:
        t.note("final status %d without awaiting the body (--post-path should read bodies)" % f.status)
    else:
        fail("first HEADERS has :status %s" % f.status)


@case("8.1/5", "HEAD is answered without content (RFC 9110 9.3.2, MUST NOT send content)")
def head_no_body(t):
    c = t.conn()
    c.request(1, c.request_fields("HEAD"))
    st = c.expect_response(1)
    status = st.final_status()
    if status is None or not 200 <= status < 300:
        fail("HEAD answered %s, expected 2xx" % st.statuses())
    if st.data:
        fail("HEAD answered with %d octets of DATA" % len(st.data))


# --- 8.1.1 Malformed Messages ------------------------------------------------

def _content_length(t, declared, chunks):
    c = t.conn()
    c.request(1, post(c, [("content-length", str(declared))]), end_stream=False)
    c.send(*[data(1, b, end_stream=(i == len(chunks) - 1)) for i, b in enumerate(chunks)])
    c.expect_malformed(1, t.cfg.strict)


@case("8.1.1/1", "DATA longer than content-length is malformed: stream error PROTOCOL_ERROR, never 2xx (MUST)",
      "http2/8.1.2.6/1")
def content_length_more(t):
    _content_length(t, 1, [b"test"])


@case("8.1.1/2", "DATA frames summing to more than content-length are malformed: stream error PROTOCOL_ERROR "
      "(MUST)", "http2/8.1.2.6/2")
def content_length_more_frames(t):
    _content_length(t, 8, [b"test", b"test", b"test"])


@case("8.1.1/3", "DATA ending the stream short of content-length is malformed: stream error PROTOCOL_ERROR "
      "(MUST)")
def content_length_less(t):
    _content_length(t, 8, [b"test"])


# --- 8.2 HTTP Fields ----------------------------------------------------------

def _malformed(t, fields):
    c = t.conn()
    c.request(1, fields(c))
    c.expect_malformed(1, t.cfg.strict)


@case("8.2/1", "An upper-case field name is malformed: stream error PROTOCOL_ERROR (MUST)", "http2/8.1.2/1")
def uppercase_name(t):
    _malformed(t, lambda c: c.request_fields(extra=[("X-Test", "ok")]))


@case("8.2.1/1", "A field value with LF is malformed: stream error PROTOCOL_ERROR (MUST)")
def value_with_lf(t):
    _malformed(t, lambda c: c.request_fields(extra=[("x-test", "a\nb")]))


@case("8.2.1/2", "A field name with a space is malformed: stream error PROTOCOL_ERROR (MUST)")
def name_with_space(t):
    _malformed(t, lambda c: c.request_fields(extra=[("x test", "ok")]))


def _connection_specific(n, name, value, h2spec=None):
    @case("8.2.2/%d" % n, "A %s field is connection-specific: malformed, stream error PROTOCOL_ERROR (MUST)"
          % name, h2spec)
    def fn(t):
        _malformed(t, lambda c: c.request_fields(extra=[(name, value)]))
    return fn


_connection_specific(1, "connection", "keep-alive", "http2/8.1.2.2/1")
_connection_specific(2, "keep-alive", "timeout=5")
_connection_specific(3, "proxy-connection", "keep-alive")
_connection_specific(4, "transfer-encoding", "chunked")
_connection_specific(5, "upgrade", "h2c")


@case("8.2.2/6", "TE other than \"trailers\" is malformed: stream error PROTOCOL_ERROR (MUST)",
      "http2/8.1.2.2/2")
def te_not_trailers(t):
    _malformed(t, lambda c: c.request_fields(extra=[("te", "trailers, deflate")]))


@case("8.2.2/7", "TE: trailers is accepted (MAY be sent)")
def te_trailers(t):
    c = t.conn()
    c.request(1, c.request_fields(extra=[("te", "trailers")]))
    st = c.expect_response(1)
    if st.final_status() != 200:
        fail("answered %s, expected 200" % st.statuses())


# --- 8.3 HTTP Control Data ---------------------------------------------------

@case("8.3/1", "An unknown pseudo-header field is malformed: stream error PROTOCOL_ERROR (MUST)",
      "http2/8.1.2.1/1")
def unknown_pseudo(t):
    _malformed(t, lambda c: c.request_fields(extra=[(":test", "ok")]))


@case("8.3/2", "A response pseudo-header field (:status) in a request is malformed: stream error "
      "PROTOCOL_ERROR (MUST)", "http2/8.1.2.1/2")
def response_pseudo(t):
    _malformed(t, lambda c: c.request_fields(extra=[(":status", "200")]))


@case("8.3/3", "A pseudo-header field in trailers is malformed: stream error PROTOCOL_ERROR (MUST)",
      "http2/8.1.2.1/3")
def pseudo_in_trailers(t):
    c = t.conn()
    c.request(1, post(c), end_stream=False)
    c.send(data(1, b"test"), headers(1, c.encode([(":method", "POST")]), end_stream=True))
    c.expect_malformed(1, t.cfg.strict)


@case("8.3/4", "A pseudo-header field after a regular field is malformed: stream error PROTOCOL_ERROR (MUST)",
      "http2/8.1.2.1/4")
def pseudo_after_regular(t):
    def fields(c):
        f = c.request_fields()
        return f[:3] + [("x-test", "ok")] + f[3:]
    _malformed(t, fields)


# --- 8.3.1 Request Pseudo-Header Fields ----------------------------------

def _pseudo(n, desc, edit, h2spec=None):
    @case("8.3.1/%d" % n, desc + " is malformed: stream error PROTOCOL_ERROR (MUST)", h2spec)
    def fn(t):
        _malformed(t, lambda c: edit(c.request_fields()))
    return fn


def _without(name):
    return lambda f: [kv for kv in f if kv[0] != name]


def _twice(name):
    return lambda f: f + [kv for kv in f if kv[0] == name]


_pseudo(1, "An empty :path", lambda f: [(k, "" if k == ":path" else v) for k, v in f], "http2/8.1.2.3/1")
_pseudo(2, "A request without :method", _without(":method"), "http2/8.1.2.3/2")
_pseudo(3, "A request without :scheme", _without(":scheme"), "http2/8.1.2.3/3")
_pseudo(4, "A request without :path", _without(":path"), "http2/8.1.2.3/4")
_pseudo(5, "A duplicated :method", _twice(":method"), "http2/8.1.2.3/5")
_pseudo(6, "A duplicated :scheme", _twice(":scheme"), "http2/8.1.2.3/6")
_pseudo(7, "A duplicated :path", _twice(":path"), "http2/8.1.2.3/7")
_pseudo(8, "A duplicated :authority", _twice(":authority"))


# --- 8.4 Server Push -----------------------------------------------------------

@case("8.4/1", "PUSH_PROMISE from a client is a connection error PROTOCOL_ERROR (MUST)", "http2/8.2/1")
def client_push_promise(t):
    c = t.conn()
    c.request(1, post(c), end_stream=False)
    c.send(push_promise(1, 2, c.encode(c.request_fields())))
    c.expect_connection_error(PROTOCOL_ERROR)
