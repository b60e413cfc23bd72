#!/usr/bin/env bash
# Builds the images the dev environment's real nodes run (devenv/images/recipes.py: the
# pause sandbox, busybox, Python; for the operators' pods Argo's executor (argoexec), the MPI
# operator's pi example (mpi-pi), Spark (docker.io/apache/spark:4.0.4), Ray (rayproject/ray:2.52.0)
# and Dask (dask-kubernetes:dev), the training operator's job kinds (pytorch, tensorflow, xgboost,
# paddle, mxnet, jax: armada-bridge.local/<key>:<version>-bookworm, each with a program of ours)
# and its MPIJob v1 launcher's kubectl-delivery; and the bridge's own runtime image, the Dockerfile's (bridge:
# ghcr.io/armadaproject/armada-bridge:<version>, docs/install.md) and the pinned kube-scheduler
# (the chart's second scheduler)) from Debian's packages, PyPI,
# this repository and the pinned operators' modules, as OCI archives (which ctr import, docker
# load and podman load read) in the cache outside the repository, keyed by content. A
# second run finds them and does nothing. Spark, Ray, Dask and the frameworks take minutes each and
# make archives of hundreds of MiB (Spark's jars alone are 440 MiB, TensorFlow's 1.3 GiB).
#
#   hack/build-images.sh [KEY ...]    build what is missing; prints key, image name, archive
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec .venv/bin/python -m devenv.images.build "$@"
