"""Run inside a remote pod: `peer.py serve PORT [LINGER]` answers one connection with what it read,
upper-cased, then stays LINGER seconds (0 by default);
`peer.py call NAME PORT` reaches NAME (a DNS name of the remote cluster, resolved with the
container's own resolver), retrying until it answers, and prints the address and the answer."""

import socket
import sys
import time

if sys.argv[1] == "serve":
    with socket.create_server(("", int(sys.argv[2]))) as server:
        conn, peer = server.accept()
        with conn:
            data = conn.recv(1024)
            conn.sendall(data.upper())
        print(f"served {peer[0]}: {data.decode()}", flush=True)
    time.sleep(float(sys.argv[3]) if len(sys.argv) > 3 else 0)
else:
    name, port = sys.argv[2], int(sys.argv[3])
    deadline = time.monotonic() + 90
    while True:
        try:
            address = socket.gethostbyname(name)
            with socket.create_connection((address, port), timeout=5) as conn:
                conn.sendall(b"hello from the client")
                print(f"{name} is {address}: {conn.recv(1024).decode()}", flush=True)
                break
        except OSError as e:
            if time.monotonic() > deadline:
                raise
            print(f"not yet: {e}", flush=True)
            time.sleep(1)
