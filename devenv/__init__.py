"""The local multi-cluster environment (`armada-bridge dev`), its builds and the demo: tooling for
development and the tests, never in the bridge's image."""
