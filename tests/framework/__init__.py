"""The tests' framework: what the integration and end-to-end tests share (clients and kubectl,
waits, pod builders, placement, the released operators' samples and end states, the room every
test against the shared environment holds); the fixtures are in the conftests beside the tests."""

from pathlib import Path

#: Programs the real-node tests run in their pods (given to them in ConfigMaps).
PROGRAMS = Path(__file__).with_name("realnode_programs")
