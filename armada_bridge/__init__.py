"""The runtime library the components share: the pure scheduling core, Kubernetes access, the
contract between extender and vkubelet, the bridge's keys and certificates."""
