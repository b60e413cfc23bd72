"""Armada's gRPC API (v0.22: Submit, QueueService, Event, Jobs) in front of the bridge: Armada's
clients submit job sets that become front pods under a Queue, created, cancelled and changed with
the caller's own token, and follow their events, derived from the pods (docs/armada-api.md). A client of the front API only, like kubectl; it imports neither
component and neither imports it."""
