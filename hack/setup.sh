#!/usr/bin/env bash
# Installs what the project needs on a fresh machine: a virtualenv with the package and its dev
# dependencies (.venv), the pinned Kubernetes/etcd/KWOK binaries, kwok-exec (hack/kwok-exec: the dev
# remote clusters' exec server) and the released operators (each built once into the cache; the
# Spark operator also needs Java, installed with apt-get where `java` is missing, and Spark from
# PyPI `pyspark`, about 450 MB).
# Safe to run again: it only does what is missing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

say() { printf '[setup] %s\n' "$*" >&2; }
py=${PYTHON:-python3}
"$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' \
  || { echo "setup: Python >= 3.11 is required (found $("$py" --version 2>&1))" >&2; exit 1; }
stamp=.venv/.installed-$(sha1sum pyproject.toml | cut -c1-12)
if [ ! -f "$stamp" ]; then
  say "creating .venv and installing armada-bridge with its dev dependencies"
  [ -x .venv/bin/python ] || "$py" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[dev]'
  rm -f .venv/.installed-*; touch "$stamp"
else
  say ".venv up to date"
fi
bash hack/build-binaries.sh >/dev/null
bash hack/build-operators.sh >/dev/null
