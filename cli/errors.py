"""What the CLI says when a command fails: one line and an exit status per kind of failure, never a
traceback for what a user can fix (a kubeconfig, a server out of reach, rights, a name)."""

from __future__ import annotations

import enum
import json
import os
from dataclasses import dataclass

import urllib3.exceptions
from kubernetes.client.rest import ApiException
from kubernetes.config.config_exception import ConfigException

# The local environment's package: in a checkout, not in the bridge's image.
DEV_PACKAGE = "devenv"


class Status(enum.IntEnum):
    ERROR = 1  # bad input, a command that failed
    USAGE = 2  # argparse's
    KUBECONFIG = 3
    UNREACHABLE = 4
    FORBIDDEN = 5
    NOT_FOUND = 6


class NotFound(LookupError):
    """What was asked for does not exist."""


@dataclass(frozen=True)
class Failure:
    status: Status
    message: str


def _api_message(e: ApiException) -> str:
    """The API server's own message (its Status body), else the HTTP reason."""
    try:
        body = json.loads(e.body or "")
    except (TypeError, ValueError):
        body = None
    message = body.get("message") if isinstance(body, dict) else None
    return str(message or e.reason or f"HTTP {e.status}")


def _unreachable(e: urllib3.exceptions.HTTPError) -> str:
    reason = getattr(e, "reason", None) or e
    where = ""
    if isinstance(e, urllib3.exceptions.MaxRetryError) and e.pool is not None:
        where = f" at {e.pool.scheme}://{e.pool.host}:{e.pool.port}"
    text = str(reason)
    # urllib3 prefixes the connection object's repr: keep what the system said
    if text.startswith(("<", "HTTPConnection(", "HTTPSConnection(")) and ": " in text:
        text = text.split(": ", 1)[1]
    return f"cannot reach the API server{where}: {text}"


def failure(e: BaseException, kubeconfig: str | None = None) -> Failure | None:
    """The failure `e` is for the user, or None: a bug (the traceback is for us)."""
    if isinstance(e, ConfigException | FileNotFoundError):
        named = e.filename if isinstance(e, FileNotFoundError) else None
        path = named or kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
        first = os.path.expanduser(path.split(os.pathsep)[0])
        why = "no such file" if not os.path.exists(first) else str(e)
        return Failure(Status.KUBECONFIG, f"kubeconfig {path}: {why}")
    if isinstance(e, urllib3.exceptions.HTTPError):
        return Failure(Status.UNREACHABLE, _unreachable(e))
    if isinstance(e, ApiException):
        if e.status in (401, 403):
            return Failure(Status.FORBIDDEN, _api_message(e))
        if e.status == 404:
            return Failure(Status.NOT_FOUND, _api_message(e))
        return Failure(Status.ERROR, f"the API server answered {e.status}: {_api_message(e)}")
    if isinstance(e, NotFound):
        return Failure(Status.NOT_FOUND, str(e))
    if isinstance(e, ModuleNotFoundError) and (e.name or "").split(".")[0] == DEV_PACKAGE:
        return Failure(Status.ERROR, "the local environment's commands run from a checkout of armada-bridge")
    if isinstance(e, ValueError | RuntimeError):  # devenv.base.ClusterError among them
        return Failure(Status.ERROR, str(e))
    return None
