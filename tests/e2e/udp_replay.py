#!/usr/bin/env python3
"""A UDP relay on 127.0.0.1 that records a client's datagrams and can send
them again: what an attacker who copies a QUIC client's first flight does to
its 0-RTT (http3_early.sh).
    udp_replay.py PORTFILE SERVER_PORT SECONDS
Writes the port it listens on to PORTFILE, relays one client's datagrams to
127.0.0.1:SERVER_PORT and the server's back until PORTFILE.go exists; then sends
the datagrams the client sent before the server's first answer again, from a
new socket (another source port: a new connection to the server), writes
PORTFILE.done with how many it sent, and exits. Everything ends by itself
after SECONDS."""
import os
import select
import socket
import sys
import time

portfile, server_port, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
end = time.monotonic() + secs
server = ("127.0.0.1", server_port)
front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
front.bind(("127.0.0.1", 0))
back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
back.connect(server)
with open(portfile + ".tmp", "w") as f:
    f.write("%d\n" % front.getsockname()[1])
os.rename(portfile + ".tmp", portfile)

client = None
first_flight = []  # the client's datagrams before the server's first answer
answered = False
while time.monotonic() < end and not os.path.exists(portfile + ".go"):
    ready, _, _ = select.select([front, back], [], [], 0.05)
    for s in ready:
        if s is front:
            data, client = front.recvfrom(65536)
            if not answered:
                first_flight.append(data)
            back.send(data)
        else:
            data = back.recv(65536)
            answered = True
            if client:
                front.sendto(data, client)

if os.path.exists(portfile + ".go"):
    replay = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    replay.connect(server)
    for data in first_flight:
        replay.send(data)
    # Whatever the server answers is drained for a moment (a real attacker
    # cannot read it either: it has no keys).
    stop = min(end, time.monotonic() + 1.0)
    while time.monotonic() < stop:
        if select.select([replay], [], [], 0.05)[0]:
            replay.recv(65536)
    with open(portfile + ".done", "w") as f:
        f.write("%d\n" % len(first_flight))
