"""The MXNet image, `armada-bridge.local/mxnet:1.9-bookworm` (framework.py): Debian's Python 3 with
PyPI's `mxnet` 1.9.1 (the last release; its wheel is `py3-none`, with OpenBLAS and oneDNN inside),
and our program hack/images/mxnet/kvstore.py: the scheduler, server and worker of an MXJob (the
DMLC_* variables training-operator v1.8.1 sets) run a `dist_sync` kvstore, the workers push and
pull, and each prints the aggregated value.

MXNet 1.9.1 runs on bookworm's Python 3.11, but not with numpy 1.24 or later (Debian's python3-numpy
is 1.24.2): `import mxnet` fails at mxnet/numpy/utils.py line 37, `bool = onp.bool`, an alias numpy
1.24 removed (AttributeError: module 'numpy' has no attribute 'bool'). numpy 1.23.5, the last
before that removal, has wheels for Python 3.11: pinned here, from PyPI.
"""

from __future__ import annotations

from devenv.images.framework import BASE_PACKAGES, FrameworkImage

MXNET_VERSION = "1.9.1"
NUMPY_VERSION = "1.23.5"  # the last numpy with `numpy.bool`, which mxnet 1.9.1 imports

# OpenMP and the quad-precision maths runtime, which its libmxnet.so links and leaves to the system.
PACKAGES = (*BASE_PACKAGES, "libgomp1", "libquadmath0")
PIP = (f"mxnet=={MXNET_VERSION}", f"numpy=={NUMPY_VERSION}")
IMAGE = FrameworkImage("mxnet", "1.9", PIP, "kvstore.py", __file__, PACKAGES)
