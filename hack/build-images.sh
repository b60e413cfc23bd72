#!/usr/bin/env bash
# Builds the images the dev environment's real nodes run (armada_bridge/dev/images/recipes.py: the
# pause sandbox, busybox, Python, Argo's executor `argoexec`, the MPI operator's pi example `mpi-pi`)
# from Debian's packages, this repository and the pinned operators' modules, as OCI archives in the
# cache outside the repository, keyed by content. A second run finds them and does nothing.
#
#   hack/build-images.sh [KEY ...]    build what is missing; prints key, image name, archive
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec .venv/bin/python -m armada_bridge.dev.images.build "$@"
