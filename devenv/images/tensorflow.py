"""The TensorFlow image, `armada-bridge.local/tensorflow:2.21-bookworm` (framework.py): Debian's
Python 3 with PyPI's `tensorflow-cpu` (no CUDA), and our program hack/images/tensorflow/mwms.py:
the workers of a TFJob read the TF_CONFIG the training operator sets in each pod (the cluster's
`<job>-<type>-<i>.<namespace>.svc:<port>` addresses and the pod's own task), train a few steps with
MultiWorkerMirroredStrategy (collective all-reduce over gRPC) and print their weights, the same on
every worker.
"""

from __future__ import annotations

from devenv.images.framework import FrameworkImage

TENSORFLOW_VERSION = "2.21.0"  # the newest tensorflow-cpu with wheels for bookworm's Python 3.11

PIP = (f"tensorflow-cpu=={TENSORFLOW_VERSION}",)
UNUSED = ("tensorflow/include",)  # its C++ headers: nothing compiles here
ENV = {"TF_CPP_MIN_LOG_LEVEL": "2"}  # fewer of its C++ INFO and WARNING lines in the pods' logs
IMAGE = FrameworkImage("tensorflow", "2.21", PIP, "mwms.py", __file__, unused=UNUSED, env=ENV)
