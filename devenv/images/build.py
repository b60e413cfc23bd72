"""Build the real nodes' images (devenv.images.recipes) into the cache, keyed by content:
`<cache>/images/<key>-<digest>.tar`, an OCI image archive. A second run finds them and does nothing.

    python -m devenv.images.build [KEY ...]   # build what is missing (all by default)
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from devenv.binaries import cache_root
from devenv.images.oci import write_archive
from devenv.images.recipes import RECIPES, Recipe

KEPT_BUILDS = 3  # archives of one recipe kept in the cache, the newest


def log(msg: str) -> None:
    print(f"[images] {msg}", file=sys.stderr, flush=True)


def archive_path(recipe: Recipe) -> Path:
    return cache_root() / "images" / f"{recipe.key}-{recipe.digest()}.tar"


def ensure(recipe: Recipe) -> Path:
    """The image archive of `recipe`, built first when it is not in the cache."""
    target = archive_path(recipe)
    if target.is_file():
        return target
    started = time.monotonic()
    log(f"building {recipe.name} ({recipe.key}) into {target}")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"image-{recipe.key}-", dir=target.parent) as tmp:
        work = Path(tmp)
        rootfs = work / "rootfs.tar"
        recipe.build(work, rootfs)
        partial = work / "image.tar"
        write_archive(rootfs, recipe.name, recipe.config, partial)
        partial.rename(target)  # whole or not at all
    # Older builds go, but not the last few: another checkout (a CI clone, a worktree) may be
    # importing its own (the bridge's image is keyed by the code's content).
    others = sorted(
        (p for p in target.parent.glob(f"{recipe.key}-*.tar") if p != target),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    for stale in others[KEPT_BUILDS - 1 :]:
        stale.unlink(missing_ok=True)
    log(f"{recipe.key}: {target.stat().st_size / 2**20:.1f} MiB in {time.monotonic() - started:.0f}s")
    return target


def ensure_all(keys: list[str] | None = None) -> dict[str, Path]:
    return {k: ensure(RECIPES[k]) for k in keys or RECIPES}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the dev environment's real-node images.")
    parser.add_argument("keys", nargs="*", choices=[*RECIPES, []], help="images to build (default: all)")
    parser.add_argument(
        "--without-builds",
        action="store_true",
        help="only the images not made from what hack/build-binaries.sh or hack/build-operators.sh "
        "builds (hack/setup.sh builds them beside those)",
    )
    args = parser.parse_args(argv)
    if shutil.which("ctr") is None:
        log("note: containerd's ctr is not installed; the archives are built but no node can import them")
    keys = args.keys or list(RECIPES)
    if args.without_builds:
        keys = [k for k in keys if not RECIPES[k].from_builds]
    for key, path in ensure_all(keys).items():
        print(f"{key}\t{RECIPES[key].name}\t{path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
