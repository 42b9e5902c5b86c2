#!/usr/bin/env python3
"""Fixed-count keep-alive HTTP/1.1 client for callgrind.sh: N sequential GETs on one
connection to 127.0.0.1, so a server's counters can be divided by an exact count.

usage: keepalive_client.py PORT PATH N ["Header: value" ...]
Prints {status: count} and the body bytes received."""
import socket, sys
port, path, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
extra = "".join(h + "\r\n" for h in sys.argv[4:])
req = (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}\r\n").encode()
s = socket.create_connection(("127.0.0.1", port))
buf = b""; statuses = {}; total = 0
for _ in range(n):
    s.sendall(req)
    while b"\r\n\r\n" not in buf:
        buf += s.recv(65536)
    head, buf = buf.split(b"\r\n\r\n", 1)
    lines = head.split(b"\r\n")
    st = int(lines[0].split()[1]); statuses[st] = statuses.get(st, 0) + 1
    cl = 0
    for l in lines[1:]:
        k, v = l.split(b":", 1)
        if k.strip().lower() == b"content-length": cl = int(v)
    while len(buf) < cl:
        buf += s.recv(65536)
    buf = buf[cl:]; total += cl
print(statuses, total)
