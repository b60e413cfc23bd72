"""The XGBoost image, `armada-bridge.local/xgboost:3.2-bookworm` (framework.py): Debian's Python 3
with PyPI's `xgboost-cpu` (the build without NCCL and the GPU kernels), and our program
hack/images/xgboost/train.py: the master of an XGBoostJob runs the collective's tracker at
MASTER_PORT, and master and workers (RANK, WORLD_SIZE, MASTER_ADDR as the training operator sets
them) train one model together, each on its own rows; the master prints the model's evaluation.
"""

from __future__ import annotations

from devenv.images.framework import FrameworkImage

XGBOOST_VERSION = "3.2.0"  # the newest xgboost-cpu with wheels for bookworm's Python 3.11

IMAGE = FrameworkImage("xgboost", "3.2", (f"xgboost-cpu=={XGBOOST_VERSION}",), "train.py", __file__)
