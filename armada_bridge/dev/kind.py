"""`--provider kind`: the same topology on kind clusters, where a Docker engine works."""

from __future__ import annotations

import subprocess


def require_docker() -> None:
    try:
        r = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=20, check=False)
    except (FileNotFoundError, subprocess.TimeoutExpired) as e:
        raise RuntimeError(f"--provider kind needs a Docker engine: {e}") from None
    if r.returncode != 0:
        detail = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(
            f"--provider kind needs a working Docker engine; `docker info` failed: {detail[0]}. "
            "Use the default provider (real binaries, no Docker)."
        )
    raise RuntimeError("--provider kind is not implemented yet; use the default provider")
