"""Ports drawn for an environment are its own until it releases them: environments started at once
on one host never draw the same (devenv/ports.py)."""

from __future__ import annotations

import random
from pathlib import Path

from devenv import ports


def test_an_environments_ports_are_not_drawn_for_another_until_released(tmp_path: Path) -> None:
    reserved = tmp_path / "ports.json"
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    first = ports.free_ports(40, random.Random(1), holder=one, reserved=reserved)
    # The same seed draws the same ports first: only the reservation keeps them apart.
    second = ports.free_ports(40, random.Random(1), holder=two, reserved=reserved)
    assert not set(first) & set(second)
    ports.release(one, reserved=reserved)
    assert set(ports.free_ports(40, random.Random(1), reserved=reserved)) & set(first)
    ports.release(two, reserved=reserved)
    assert not reserved.exists(), "nothing left once every environment released its ports"


def test_a_removed_environment_holds_no_ports(tmp_path: Path) -> None:
    reserved = tmp_path / "ports.json"
    gone = tmp_path / "gone"
    gone.mkdir()
    drawn = ports.free_ports(5, random.Random(2), holder=gone, reserved=reserved)
    gone.rmdir()  # removed without `dev down`
    assert ports.free_ports(5, random.Random(2), reserved=reserved) == drawn
    assert not reserved.exists()
