"""What the distributed programs of the framework images share (devenv/images/framework.py lays it
out beside each, at /opt/armada-bridge/rendezvous.py): waiting until the names of the job's other
pods resolve. The training operator gives every pod of a job a headless Service named after it, and
a name is in the cluster's DNS only once its pod is ready, so a process that starts first would
otherwise fail at once on a name it cannot resolve yet.

    python3 rendezvous.py ADDRESS...   # waits for each ADDRESS, before a program that would not
"""

import socket
import sys
import time

RESOLVE_TIMEOUT = 300.0


def host_of(address: str) -> str:
    """`host` from `host:port` (or `host` alone)."""
    return address.rsplit(":", 1)[0] if address.count(":") == 1 else address


def wait_for_names(*addresses: str, timeout: float = RESOLVE_TIMEOUT) -> None:
    """Return once every address (`host` or `host:port`) resolves; raise after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    for host in dict.fromkeys(host_of(a) for a in addresses):
        while True:
            try:
                socket.getaddrinfo(host, None)
                break
            except socket.gaierror as e:
                if time.monotonic() > deadline:
                    raise
                print(f"waiting for {host} to resolve: {e}", flush=True)
                time.sleep(2)


if __name__ == "__main__":
    wait_for_names(*sys.argv[1:])
