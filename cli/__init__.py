"""The `armada-bridge` and `kubectl armada` commands: views of the bridge's state, joining and removing
remote clusters, and (from a checkout) the local environment's commands. The one package above the
components: it reads them; nothing below imports it."""
