"""The bridge's contract, one copy for the extender and the vkubelet alike.

* :mod:`.remotecluster` — the RemoteCluster spec (validated at the boundary) and the client of a
  remote cluster built from its kubeconfig Secret;
* :mod:`.pods` — what a pod asks for and takes from a node (requests, pod slots) and its own
  scheduling constraints (the webhook's annotation codec);
* :mod:`.capacity` — which remote nodes can take pods and what is left on them.

Depends on :mod:`armada_bridge.core` (quantities), :mod:`armada_bridge.kube` and the keys only.
"""
