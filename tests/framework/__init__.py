"""The tests' framework: what the integration and end-to-end tests share (clients and kubectl,
waits, pod builders, placement, the released operators' samples and end states, the room every
test against the shared environment holds); the fixtures are in the conftests beside the tests."""

from pathlib import Path

#: Programs the real-node tests run in their pods (given to them in ConfigMaps).
PROGRAMS = Path(__file__).with_name("realnode_programs")

#: The group of the tests that make environments with real nodes: they set the host's network up
#: and down, one at a time (`pytest.mark.own_environment(REAL_NODE_ENVIRONMENTS)`).
REAL_NODE_ENVIRONMENTS = "real-node-environments"
