"""The master and workers of an XGBoostJob train one gradient-boosted model together over XGBoost's
collective (armada-bridge's own, at /opt/armada-bridge/train.py in armada-bridge.local/xgboost).

The training operator sets in each pod MASTER_ADDR (the master's Service), MASTER_PORT (the
master's `xgboostjob-port`), WORLD_SIZE (master and workers) and RANK (the master 0, the workers
after it). The master runs the tracker at MASTER_PORT; every rank, the master too, connects to it
with its RANK as task id, so the ranks are those the operator gave. Each trains on its own rows:
the histograms are all-reduced, so every rank ends with the same model, and the evaluation metrics
are the whole job's.

    python3 train.py [ROUNDS]   # every rank: "rank R/W: trained N rounds, model <sha256 prefix>"
                                # (the same on every rank); the master also: its evaluation,
                                # "master: train-logloss=... train-error=... test-accuracy=..."
"""

import hashlib
import os
import sys

import numpy as np
import xgboost as xgb
from rendezvous import wait_for_names
from xgboost import collective
from xgboost.tracker import RabitTracker

TIMEOUT = 300  # seconds the tracker waits for every rank
FEATURES = 4


def rows(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """`n` rows of a two-class problem: the label says whether the first two features sum above 0."""
    x = np.random.default_rng(seed).normal(size=(n, FEATURES))
    return x, (x[:, 0] + x[:, 1] > 0).astype(np.float32)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    address, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    tracker = None
    if rank == 0:
        tracker = RabitTracker(n_workers=world, host_ip="0.0.0.0", port=port, sortby="task", timeout=TIMEOUT)
        tracker.start()
    wait_for_names(address)
    args = {"dmlc_tracker_uri": address, "dmlc_tracker_port": port, "dmlc_task_id": str(rank)}
    with collective.CommunicatorContext(**args):
        me = f"rank {collective.get_rank()}/{collective.get_world_size()}"
        assert (collective.get_rank(), collective.get_world_size()) == (rank, world), me
        x, y = rows(1000 + rank, 200)
        train = xgb.DMatrix(x, label=y)
        params = {
            "objective": "binary:logistic",
            "eval_metric": ["logloss", "error"],
            "tree_method": "hist",
            "max_depth": 3,
            "nthread": 1,
        }
        metrics: dict[str, dict[str, list[float]]] = {}
        booster = xgb.train(params, train, rounds, evals=[(train, "train")], evals_result=metrics)
        model = hashlib.sha256(booster.save_raw("json")).hexdigest()[:16]
        print(f"{me}: trained {rounds} rounds, model {model}", flush=True)
    if tracker is None:
        return
    tracker.wait_for(TIMEOUT)
    # Out of the collective (a DMatrix made inside it is a collective operation of every rank's).
    tx, ty = rows(7, 500)
    accuracy = float(((booster.predict(xgb.DMatrix(tx)) > 0.5) == ty).mean())
    logloss, error = metrics["train"]["logloss"][-1], metrics["train"]["error"][-1]
    print(
        f"master: train-logloss={logloss:.4f} train-error={error:.4f} test-accuracy={accuracy:.3f}",
        flush=True,
    )


if __name__ == "__main__":
    main()
