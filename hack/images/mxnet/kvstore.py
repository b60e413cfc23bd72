"""The scheduler, servers and workers of an MXJob run one `dist_sync` kvstore: each worker pushes a
value of its own, pulls the servers' aggregate and prints it (armada-bridge's own, at
/opt/armada-bridge/kvstore.py in armada-bridge.local/mxnet).

training-operator v1.8.1 sets in each pod DMLC_ROLE (scheduler, server or worker), DMLC_PS_ROOT_URI
and DMLC_PS_ROOT_PORT (the scheduler's Service and port), DMLC_NUM_SERVER, DMLC_NUM_WORKER and
DMLC_USE_KUBERNETES (the scheduler listens on every address). MXNet reads them when it is imported:
a scheduler or a server serves there until the workers are done, then exits; a worker goes on.

    python3 kvstore.py   # worker: "worker R/N: pulled [[S, ...], ...]", S the sum of every
                         # worker's (rank + 1); scheduler and server: "<role>: serving"
"""

import os

from rendezvous import wait_for_names

KEY = 3
SHAPE = (2, 3)


def main() -> None:
    role = os.environ["DMLC_ROLE"]
    if role != "scheduler":
        wait_for_names(os.environ["DMLC_PS_ROOT_URI"])
    else:
        print("scheduler: serving", flush=True)
    if role == "server":
        print("server: serving", flush=True)
    # A scheduler or a server serves in this import, and exits after.
    import mxnet as mx

    kv = mx.kv.create("dist_sync")
    me = f"worker {kv.rank}/{kv.num_workers}"
    kv.init(KEY, mx.nd.zeros(SHAPE))
    kv.push(KEY, mx.nd.ones(SHAPE) * (kv.rank + 1))
    out = mx.nd.zeros(SHAPE)
    kv.pull(KEY, out=out)
    expected = kv.num_workers * (kv.num_workers + 1) / 2
    print(f"{me}: pulled {out.asnumpy().tolist()}, expected {expected} everywhere", flush=True)
    assert (out.asnumpy() == expected).all(), out
    kv._barrier()  # every worker pulled before any leaves (the scheduler ends with the last)


if __name__ == "__main__":
    main()
