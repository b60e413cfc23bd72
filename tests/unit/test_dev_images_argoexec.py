"""The argoexec image recipe: named as the pinned workflow controller names it, laid out as workflow
pods use it, and keyed by the binary's content."""

from __future__ import annotations

import tarfile
from pathlib import Path

from devenv import versions
from devenv.images import argoexec, static
from devenv.images.recipes import RECIPES, Recipe


def test_argoexec_is_the_image_the_pinned_workflow_controller_names() -> None:
    recipe = RECIPES["argoexec"]
    assert recipe.name == f"quay.io/argoproj/argoexec:{versions.load().operators['argo']}"
    # The controller runs `argoexec init|wait` as the command; upstream's image runs as root.
    assert recipe.config.entrypoint == ["argoexec"] and recipe.config.user == ""
    assert "/bin" in recipe.config.env["PATH"].split(":")


def _layout(tmp_path: Path) -> dict[str, tuple[Path, int]]:
    layout = {}
    for path, (_, mode) in argoexec.files(tmp_path).items():
        src = tmp_path / "src" / path
        src.parent.mkdir(parents=True, exist_ok=True)
        src.write_bytes(path.encode())
        layout[path] = (src, mode)
    return layout


def test_argoexec_rootfs_has_the_static_binary_where_init_finds_it(tmp_path: Path) -> None:
    rootfs = tmp_path / "rootfs.tar"
    static.write_rootfs(_layout(tmp_path), rootfs, argoexec.DIRS)
    with tarfile.open(rootfs) as t:
        members = {m.name: m for m in t.getmembers()}
        passwd = t.extractfile("etc/passwd").read().decode()  # type: ignore[union-attr]
    binary = members["bin/argoexec"]
    assert binary.isfile() and binary.mode == 0o755 and binary.uid == 0  # any user may copy it
    assert members["tmp"].isdir() and members["tmp"].mode == 0o1777
    assert members["var/run/argo"].isdir()
    for f in ("etc/ssh/ssh_known_hosts", "etc/nsswitch.conf", "etc/mime.types", static.CA_BUNDLE[1:]):
        assert members[f].isfile()
    assert passwd.startswith("root:x:0:0:")
    # Every directory comes before what it holds.
    names = list(members)
    for name in names:
        parent = str(Path(name).parent)
        assert parent == "." or names.index(parent) < names.index(name)


def test_argoexec_digest_follows_the_binary_content(tmp_path: Path) -> None:
    layout = _layout(tmp_path)
    recipe = Recipe("argoexec", "x", argoexec.CONFIG, argoexec.build, lambda: static.content_inputs(layout))
    before = recipe.digest()
    assert recipe.digest() == before
    layout["bin/argoexec"][0].write_bytes(b"another build")
    assert recipe.digest() != before
