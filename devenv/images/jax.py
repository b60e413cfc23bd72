"""The JAX image, `armada-bridge.local/jax:0.10-bookworm` (framework.py): Debian's Python 3 with
PyPI's `jax` and `jaxlib` (CPU; jaxlib carries XLA and gloo for collectives between processes), and
our program hack/images/jax/psum.py: the processes of a JAXJob call `jax.distributed.initialize`
with what the training operator sets in each pod (COORDINATOR_ADDRESS, COORDINATOR_PORT,
NUM_PROCESSES, PROCESS_ID) and all-reduce (psum) across them, printing the result.
"""

from __future__ import annotations

from devenv.images.framework import FrameworkImage

JAX_VERSION = "0.10.2"  # the newest jax and jaxlib with wheels for bookworm's Python 3.11

IMAGE = FrameworkImage("jax", "0.10", (f"jax=={JAX_VERSION}", f"jaxlib=={JAX_VERSION}"), "psum.py", __file__)
