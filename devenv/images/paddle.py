"""The PaddlePaddle image, `armada-bridge.local/paddle:3.3-bookworm` (framework.py): Debian's Python 3
with PyPI's `paddlepaddle` (its CPU build), and our program hack/images/paddle/allreduce.py: the
workers of a collective PaddleJob meet at PADDLE_MASTER (worker 0's address, as the training
operator sets it, with PADDLE_NNODES and PADDLE_JOB_ID) under `python3 -m paddle.distributed.launch`,
which ranks them, and all-reduce over gloo, printing the sum. Paddle's C++ headers are left out
(nothing compiles here); its OpenVINO libraries stay (libpaddle.so links them).
"""

from __future__ import annotations

from devenv.images.framework import BASE_PACKAGES, FrameworkImage

PADDLE_VERSION = "3.3.1"  # the newest paddlepaddle with wheels for bookworm's Python 3.11

# OpenMP, which some of its libraries link; setuptools, which `import paddle` imports
# (paddle/utils/cpp_extension) without requiring it. Its C++ headers are left out.
PACKAGES = (*BASE_PACKAGES, "libgomp1", "python3-setuptools")
PIP = (f"paddlepaddle=={PADDLE_VERSION}",)
IMAGE = FrameworkImage("paddle", "3.3", PIP, "allreduce.py", __file__, PACKAGES, ("paddle/include",))
