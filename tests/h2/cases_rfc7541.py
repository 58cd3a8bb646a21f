"""RFC 7541 (HPACK) cases, ids hpack/SECTION/N. Every decoding error is a
connection error COMPRESSION_ERROR (RFC 9113 4.3). The bad representation is
appended to a valid request block (so nothing else is wrong with it), and the
encoder's dynamic table is not touched by the hand-made part.
"""
from h2cases import case, fail
from h2conn import (
    COMPRESSION_ERROR, EOS_BITS, HEADER_TABLE_SIZE, bits_to_bytes, headers, hp_indexed,
    hp_literal, hp_size_update, hp_str, huffman_bits)


def _bad_block(t, tail, head=b""):
    """A request whose field block is head + the encoded request + tail."""
    c = t.conn()
    c.send(headers(1, head + c.encode(c.request_fields()) + tail))
    c.expect_connection_error(COMPRESSION_ERROR)


@case("hpack/2.3.3/1", "An indexed field with an index beyond both tables is a decoding error (MUST)",
      "hpack/2.3.3/1")
def index_beyond(t):
    _bad_block(t, hp_indexed(70 + 200))


@case("hpack/2.3.3/2", "A literal whose name index is beyond both tables is a decoding error (MUST)",
      "hpack/2.3.3/2")
def name_index_beyond(t):
    _bad_block(t, hp_literal(None, "test", name_index=70 + 200))


@case("hpack/4.2/1", "A dynamic table size update after a field (not at the block start) is a decoding error "
      "(MUST)", "hpack/4.2/1")
def size_update_at_end(t):
    _bad_block(t, hp_size_update(0))


@case("hpack/5.1/1", "An integer that overflows the decoder (index with 10 continuation octets) is a "
      "decoding error (MUST)")
def integer_overflow(t):
    _bad_block(t, b"\xff" + b"\xff" * 10 + b"\x0f")


def _huffman_literal(bits):
    """x-test: <value> as a literal without indexing, the value's Huffman bits given."""
    return b"\x00" + hp_str("x-test") + hp_str(None, raw=bits_to_bytes(bits))


def _pad(bits, fill="1"):
    return bits + fill * (-len(bits) % 8)


@case("hpack/5.2/1", "Huffman padding longer than 7 bits is a decoding error (MUST)", "hpack/5.2/1")
def huffman_long_padding(t):
    _bad_block(t, _huffman_literal(_pad(huffman_bits("test")) + "1" * 8))


@case("hpack/5.2/2", "Huffman padding that is not the EOS prefix (zeros) is a decoding error (MUST)",
      "hpack/5.2/2")
def huffman_zero_padding(t):
    bits = huffman_bits("test")
    if len(bits) % 8 == 0:
        fail("internal: 'test' has no padding")
    _bad_block(t, _huffman_literal(_pad(bits, "0")))


@case("hpack/5.2/3", "A Huffman string containing the EOS symbol is a decoding error (MUST)", "hpack/5.2/3")
def huffman_eos(t):
    _bad_block(t, _huffman_literal(_pad(huffman_bits("tes") + EOS_BITS + huffman_bits("t"))))


@case("hpack/6.1/1", "An indexed field with index 0 is a decoding error (MUST)", "hpack/6.1/1")
def index_zero(t):
    _bad_block(t, hp_indexed(0))


@case("hpack/6.3/1", "A dynamic table size update above SETTINGS_HEADER_TABLE_SIZE is a decoding error (MUST)",
      "hpack/6.3/1")
def size_update_too_large(t):
    c = t.conn()
    limit = c.peer[HEADER_TABLE_SIZE]
    c.send(headers(1, hp_size_update(limit + 1) + c.encode(c.request_fields())))
    c.expect_connection_error(COMPRESSION_ERROR)


@case("hpack/6.3/2", "Dynamic table size updates at the block start (0, then back to the maximum) are "
      "accepted (MUST)")
def size_updates_accepted(t):
    c = t.conn()
    limit = c.peer[HEADER_TABLE_SIZE]
    # The encoder keeps its 4096 (or less): it only refers to entries the server has too.
    c.send(headers(1, hp_size_update(0) + hp_size_update(limit) + c.encode(c.request_fields())))
    st = c.expect_response(1)
    c.request(3)
    st3 = c.expect_response(3)
    if st.final_status() != 200 or st3.final_status() != 200:
        fail("answered %s and %s, expected 200" % (st.statuses(), st3.statuses()))
