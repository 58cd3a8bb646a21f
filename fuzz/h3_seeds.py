#!/usr/bin/env python3
"""Writes fuzz/corpus/h3: seeds for fuzz_h3 (fuzz_h3.c's input format: each
datagram as a 2-byte big-endian length, whose top two bits pick the client
address, then its bytes). The first flights are real: h3get (tests/h3) is run
against a UDP socket here that keeps what it receives and never answers.
    fuzz/h3_seeds.py build/tests/h3/h3get"""
import os
import socket
import subprocess
import sys


def first_flight(h3get, extra=()):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.settimeout(3)
    port = s.getsockname()[1]
    p = subprocess.Popen([h3get, "-k", "-t", "1", *extra, f"127.0.0.1:{port}", "/"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    data = s.recv(65536)
    p.wait(timeout=10)
    s.close()
    return data


def frame(d, addr=0):
    return bytes([(addr << 6) | (len(d) >> 8), len(d) & 0xff]) + d


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    h3get = sys.argv[1]
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "h3")
    os.makedirs(out, exist_ok=True)
    a, b = first_flight(h3get), first_flight(h3get, ["-X", "POST"])
    vn = bytes([0xc0, 0x0a, 0x1a, 0x2a, 0x3a, 8]) + bytes(range(8)) + bytes([4, 9, 9, 9, 9])
    vn += bytes(1200 - len(vn))
    short = bytes([0x41]) + bytes((i * 13 + 5) & 0xff for i in range(79))
    seeds = {
        "initial": frame(a),
        "initial_twice": frame(a) + frame(a),
        "two_clients": frame(a) + frame(b, 1),
        "initial_then_short": frame(a) + frame(short),
        "version_negotiation": frame(vn, 2),
        "short_unknown": frame(short, 3),
        "junk": frame(bytes(range(256)) * 2) + frame(b"\xff" * 40),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
