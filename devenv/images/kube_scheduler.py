"""The official kube-scheduler image of the pinned release, `registry.k8s.io/kube-scheduler:<version>`,
the Helm chart's default `scheduler.secondScheduler.image`: the second scheduler it runs in each
extender pod for managed Kubernetes (`scheduler.mode: second-scheduler`).

Laid out as the release's image is: the static binary (CGO_ENABLED=0, hack/build-binaries.sh) at
/usr/local/bin/kube-scheduler on a distroless/static-like root (its accounts, CA certificates from
the host's Debian `ca-certificates`, /tmp), PATH as distroless sets it. The chart's container names
its command (`kube-scheduler --config=...`), as it does for the official image.
"""

from __future__ import annotations

from pathlib import Path

from devenv import binaries, versions
from devenv.images import static
from devenv.images.oci import ImageConfig

BINARY = "usr/local/bin/kube-scheduler"
CONFIG = ImageConfig(env={"PATH": "/usr/local/bin:/usr/bin:/bin"})


def image(version: str) -> str:
    return f"registry.k8s.io/kube-scheduler:{version}"


def files() -> dict[str, tuple[Path, int]]:
    """The image's files (path in the image -> source, mode): the binary, built first if needed."""
    return {
        BINARY: (binaries.ensure().kube_scheduler, 0o755),
        static.CA_BUNDLE.lstrip("/"): (Path(static.CA_BUNDLE), 0o644),
    }


def inputs() -> tuple[str, ...]:
    return static.content_inputs(files())


def build(work: Path, rootfs: Path) -> None:
    static.write_rootfs(files(), rootfs)


IMAGE = image(versions.load().kubernetes)
