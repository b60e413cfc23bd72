"""Names of the clusters in the dev environment."""

FRONT = "front"


def remote_name(i: int) -> str:
    return f"remote-{i}"
