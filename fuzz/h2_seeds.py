#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_h2 (fuzz/corpus/h2/): client flows after the
connection preface, each input's first byte the cut between the two writes
(fuzz_h2.c). HPACK by hand: static-table indices and literals without
indexing, no Huffman. Run from the repository root: python3 fuzz/h2_seeds.py"""
import os
import struct

DATA, HEADERS, PRIORITY, RST, SETTINGS, PING, GOAWAY, WINDOW, CONT = 0, 1, 2, 3, 4, 6, 7, 8, 9
END_STREAM, ACK, END_HEADERS, PADDED, PRIO = 1, 1, 4, 8, 0x20


def frame(t, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([t, flags]) + struct.pack(">I", sid) + payload


def lit(name, value):
    """Literal without indexing, new name (RFC 7541 6.2.2); lengths < 127."""
    n, v = name.encode(), value.encode()
    assert len(n) < 127 and len(v) < 127
    return b"\x00" + bytes([len(n)]) + n + bytes([len(v)]) + v


def req(method="GET", path="/", extra=()):
    b = b""
    b += {"GET": b"\x82", "POST": b"\x83"}.get(method, lit(":method", method))
    b += b"\x86"  # :scheme http
    b += b"\x84" if path == "/" else lit(":path", path)
    b += b"\x01\x09localhost"  # :authority, literal without indexing, static name 1
    for k, v in extra:
        b += lit(k, v)
    return b


def settings(*iv):
    return frame(SETTINGS, 0, 0, b"".join(struct.pack(">HI", k, v) for k, v in iv))


S = settings()
seeds = {
    "get": S + frame(HEADERS, END_STREAM | END_HEADERS, 1, req()),
    "get_ack_settings": S + frame(SETTINGS, ACK, 0) + frame(HEADERS, END_STREAM | END_HEADERS, 1, req()),
    "static_files": S
    + frame(HEADERS, END_STREAM | END_HEADERS, 1, req(path="/files/a.txt"))
    + frame(HEADERS, END_STREAM | END_HEADERS, 3, req(path="/files/c.txt", extra=[("accept-encoding", "gzip")]))
    + frame(HEADERS, END_STREAM | END_HEADERS, 5, req(path="/files/big.bin", extra=[("range", "bytes=10-20")]))
    + frame(HEADERS, END_STREAM | END_HEADERS, 7, req(path="/files/a.txt", extra=[("if-none-match", '"x"')]))
    + frame(HEADERS, END_STREAM | END_HEADERS, 9, req(path="/files/d/"))
    + frame(HEADERS, END_STREAM | END_HEADERS, 11, req(path="/files/nope")),
    "head_big": S + frame(HEADERS, END_STREAM | END_HEADERS, 1, req("HEAD", "/files/big.bin")),
    "post_data": S
    + frame(HEADERS, END_HEADERS, 1, req("POST", extra=[("content-length", "5")]))
    + frame(DATA, END_STREAM, 1, b"hello"),
    "post_too_big": S
    + frame(HEADERS, END_HEADERS, 1, req("POST", extra=[("content-length", "5000")]))
    + frame(DATA, 0, 1, b"x" * 100),
    "post_trailers": S
    + frame(HEADERS, END_HEADERS, 1, req("POST"))
    + frame(DATA, 0, 1, b"abc")
    + frame(HEADERS, END_STREAM | END_HEADERS, 1, lit("x-trailer", "1")),
    "expect_continue": S
    + frame(HEADERS, END_HEADERS, 1, req("POST", extra=[("expect", "100-continue"), ("content-length", "3")]))
    + frame(DATA, END_STREAM, 1, b"abc"),
    "ping": S + frame(PING, 0, 0, b"12345678") + frame(PING, ACK, 0, b"87654321")
    + frame(HEADERS, END_STREAM | END_HEADERS, 1, req()),
    "rst_stream": S
    + frame(HEADERS, END_HEADERS, 1, req("POST"))
    + frame(RST, 0, 1, struct.pack(">I", 8))
    + frame(HEADERS, END_STREAM | END_HEADERS, 3, req()),
    "continuation": S
    + frame(HEADERS, END_STREAM, 1, req()[:3])
    + frame(CONT, 0, 1, req()[3:])
    + frame(CONT, END_HEADERS, 1, lit("x-a", "b")),
    "small_window": settings((4, 100))
    + frame(HEADERS, END_STREAM | END_HEADERS, 1, req(path="/files/big.bin"))
    + frame(WINDOW, 0, 1, struct.pack(">I", 500))
    + frame(WINDOW, 0, 0, struct.pack(">I", 500)),
    "goaway": S + frame(HEADERS, END_STREAM | END_HEADERS, 1, req()) + frame(GOAWAY, 0, 0, struct.pack(">II", 0, 0)),
    "priority_padding_unknown": S
    + frame(PRIORITY, 0, 1, struct.pack(">IB", 0, 16))
    + frame(HEADERS, END_STREAM | END_HEADERS | PADDED | PRIO, 3, b"\x02" + struct.pack(">IB", 0, 16) + req() + b"\0\0")
    + frame(0x20, 0, 0, b"unknown"),
    # An unknown :method walked llhttp_method_name past its last method (abort).
    "regress_unknown_method": S + frame(HEADERS, END_STREAM | END_HEADERS, 1, req("BREW")),
    "limits": S
    + frame(HEADERS, END_STREAM | END_HEADERS, 1, req(path="/" + "a" * 100))
    + frame(HEADERS, END_STREAM | END_HEADERS, 3, req(extra=[("x-%d" % i, "v" * 60) for i in range(10)]))
    + frame(HEADERS, END_STREAM | END_HEADERS, 5, req("BREW"))
    + frame(HEADERS, END_STREAM | END_HEADERS, 7, req(extra=[("te", "gzip")]))
    + frame(HEADERS, END_STREAM | END_HEADERS, 9, req(extra=[("host", "other")])),
}

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "h2")
os.makedirs(out, exist_ok=True)
for i, (name, body) in enumerate(sorted(seeds.items())):
    cut = bytes([(i * 37) % 256])
    with open(os.path.join(out, name), "wb") as f:
        f.write(cut + body)
print("%d seeds in %s" % (len(seeds), out))
