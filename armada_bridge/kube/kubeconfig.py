"""Client configuration from a kubeconfig (a file or its parsed content) or from inside a pod.

The bridge's processes read what they connect with here rather than through the `kubernetes`
package, whose loader imports its whole generated client (about 39 MB of memory in every process,
and most of a second at start). What a kubeconfig can say that changes how to connect, and this
loader does not do, is refused with a message naming it, never ignored.

Inline certificates and keys (`*-data`) are handed to the TLS context through anonymous in-memory
files: nothing is written to disk, so a read-only root filesystem is enough.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import ssl
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from armada_bridge.kube.client import KubeConfig

IN_CLUSTER_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
IN_CLUSTER_TOKEN = str(IN_CLUSTER_DIR / "token")
EXEC_TIMEOUT_SECONDS = 60

#: Fields that change how to connect and that this loader does not implement.
_UNSUPPORTED = {
    "cluster": ("proxy-url", "tls-server-name"),
    "user": ("auth-provider", "as", "as-groups", "as-uid", "as-user-extra"),
}


class KubeconfigError(ValueError):
    """A kubeconfig that cannot be used (its message says where and why)."""


def load_config(
    kubeconfig: str | Path | Mapping[str, Any] | None = None,
    context: str | None = None,
    *,
    credentials: bool = True,
) -> KubeConfig:
    """From a kubeconfig (a file, or its parsed content), else $KUBECONFIG, else in-cluster.

    Without ``credentials``: the server and the CA that verifies it only, no client certificate and
    no token, for requests made with someone else's token (kube-apiserver authenticates a client
    certificate before a token, so one left on the connection would speak instead of the token)."""
    source = kubeconfig or os.environ.get("KUBECONFIG")
    if not source:
        return in_cluster(credentials=credentials)
    if isinstance(source, Mapping):
        return from_dict(source, context, base=Path.cwd(), credentials=credentials)
    paths = [Path(p).expanduser() for p in str(source).split(os.pathsep) if p]
    if len(paths) == 1:
        return from_dict(_read(paths[0]), context, base=paths[0].parent, credentials=credentials)
    return from_dict(_merged(paths), context, base=Path.cwd(), credentials=credentials)


def _read(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise KubeconfigError(f"kubeconfig {path}: {e}") from e


#: The fields naming files, resolved against the directory of the kubeconfig that names them.
_FILE_FIELDS = {
    "clusters": ("certificate-authority",),
    "users": ("client-certificate", "client-key", "tokenFile"),
}


def _merged(paths: list[Path]) -> dict[str, Any]:
    """Several kubeconfigs as kubectl merges $KUBECONFIG's list: the first file to set a value (the
    current context, an entry of a given name) wins; files that do not exist are skipped."""
    out: dict[str, Any] = {"contexts": [], "clusters": [], "users": []}
    for path in paths:
        if not path.exists():
            continue
        config = _read(path) or {}
        out["current-context"] = out.get("current-context") or config.get("current-context")
        for section in ("contexts", "clusters", "users"):
            names = {e.get("name") for e in out[section]}
            for entry in config.get(section) or []:
                if not isinstance(entry, Mapping) or entry.get("name") in names:
                    continue
                field = section[:-1]
                value = dict(entry.get(field) or {})
                for key in _FILE_FIELDS.get(section, ()):
                    if value.get(key):
                        value[key] = _path(value[key], path.parent)
                out[section].append({"name": entry.get("name"), field: value})
    return out


def in_cluster(*, credentials: bool = True) -> KubeConfig:
    """The API server of the cluster this process runs in, with its ServiceAccount's token (read
    again whenever the file changes: it rotates)."""
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise KubeconfigError("no kubeconfig given, $KUBECONFIG unset, and not in a pod")
    if ":" in host:  # IPv6
        host = f"[{host}]"
    ctx = ssl.create_default_context(cafile=str(IN_CLUSTER_DIR / "ca.crt"))
    return KubeConfig(
        server=f"https://{host}:{port}",
        ssl_context=ctx,
        token_file=IN_CLUSTER_TOKEN if credentials else None,
    )


def from_dict(config: Any, context: str | None = None, *, base: Path, credentials: bool = True) -> KubeConfig:
    """From a parsed kubeconfig; relative file names are taken from `base`."""
    if not isinstance(config, Mapping):
        raise KubeconfigError("a kubeconfig is a mapping (apiVersion: v1, kind: Config)")
    name = context or config.get("current-context")
    if not name:
        raise KubeconfigError("no context named and no current-context")
    ctx = _named(config, "contexts", "context", name)
    cluster = _named(config, "clusters", "cluster", ctx.get("cluster"))
    user = _named(config, "users", "user", ctx.get("user")) if ctx.get("user") else {}
    for kind, section in (("cluster", cluster), ("user", user)):
        for key in _UNSUPPORTED[kind]:
            if section.get(key):
                raise KubeconfigError(f"{kind} {key!r} is not supported by the bridge's client")
    server = str(cluster.get("server") or "").rstrip("/")
    if not server.startswith(("https://", "http://")):
        raise KubeconfigError(f"cluster {ctx.get('cluster')!r}: server {server!r} is not an http(s) URL")
    if not credentials:
        user = {}
    elif user.get("exec"):
        user = {**user, **_exec_credential(user["exec"], base)}
    headers: dict[str, str] = {}
    token_file = _path(user.get("tokenFile"), base)
    if user.get("token"):
        headers["Authorization"] = f"Bearer {user['token']}"
        token_file = None
    elif user.get("username") and user.get("password"):
        basic = base64.b64encode(f"{user['username']}:{user['password']}".encode()).decode()
        headers["Authorization"] = f"Basic {basic}"
    ssl_context: ssl.SSLContext | bool = True
    if server.startswith("https://"):
        ssl_context = _tls(cluster, user, base)
    return KubeConfig(server=server, ssl_context=ssl_context, headers=headers, token_file=token_file)


def _named(config: Mapping[str, Any], section: str, field: str, name: Any) -> Mapping[str, Any]:
    for entry in config.get(section) or []:
        if isinstance(entry, Mapping) and entry.get("name") == name:
            value = entry.get(field)
            if not isinstance(value, Mapping):
                raise KubeconfigError(f"{section} {name!r} has no {field}")
            return value
    raise KubeconfigError(f"no {field} named {name!r} in {section}")


def _path(value: Any, base: Path) -> str | None:
    return str(base / Path(str(value)).expanduser()) if value else None


def _data(section: Mapping[str, Any], key: str, base: Path) -> bytes | None:
    """The PEM named by `key` (a file) or `key`-data (base64), if either is set."""
    inline = section.get(f"{key}-data")
    if inline:
        try:
            return base64.b64decode(inline, validate=True)
        except (binascii.Error, ValueError) as e:
            raise KubeconfigError(f"{key}-data is not base64: {e}") from e
    path = _path(section.get(key), base)
    if path is None:
        return None
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise KubeconfigError(f"{key}: {e}") from e


def _tls(cluster: Mapping[str, Any], user: Mapping[str, Any], base: Path) -> ssl.SSLContext:
    if cluster.get("insecure-skip-tls-verify"):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    else:  # the named CA alone; the system's roots (milliseconds to load) only where none is named
        ca = _data(cluster, "certificate-authority", base)
        cadata = ca.decode("ascii", "replace") if ca is not None else None
        ctx = ssl.create_default_context(cadata=cadata)
    cert = _data(user, "client-certificate", base)
    key = _data(user, "client-key", base)
    if (cert is None) != (key is None):
        raise KubeconfigError("a client certificate needs its key, and a key its certificate")
    if cert is not None and key is not None:
        with _in_memory(cert) as cert_path, _in_memory(key) as key_path:
            try:
                ctx.load_cert_chain(cert_path, key_path)
            except ssl.SSLError as e:
                raise KubeconfigError(f"client certificate or key: {e}") from e
    return ctx


@contextmanager
def _in_memory(data: bytes) -> Iterator[str]:
    """A file name for `data` that the TLS library can open: an anonymous in-memory file where the
    system has them (Linux), else a private temporary file, removed on leaving."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("kubeconfig", os.MFD_CLOEXEC)
        try:
            os.write(fd, data)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    with tempfile.NamedTemporaryFile() as f:  # pragma: no cover - not Linux
        f.write(data)
        f.flush()
        yield f.name


def _exec_credential(spec: Mapping[str, Any], base: Path) -> dict[str, Any]:
    """Run a credential plugin once (client.authentication.k8s.io ExecCredential): its token, or
    its client certificate and key, as kubeconfig user fields."""
    command = spec.get("command")
    if not command:
        raise KubeconfigError("user exec has no command")
    if "/" in str(command) and not Path(str(command)).is_absolute():
        command = str(base / str(command))
    env = {**os.environ, **{e["name"]: e["value"] for e in spec.get("env") or []}}
    env["KUBERNETES_EXEC_INFO"] = json.dumps(
        {"apiVersion": spec.get("apiVersion"), "kind": "ExecCredential", "spec": {"interactive": False}}
    )
    try:
        done = subprocess.run(
            [str(command), *[str(a) for a in spec.get("args") or []]],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=EXEC_TIMEOUT_SECONDS,
            check=True,
        )
        status = json.loads(done.stdout).get("status") or {}
    except subprocess.CalledProcessError as e:
        why = e.stderr.decode(errors="replace").strip()[-500:]
        raise KubeconfigError(f"user exec {command}: exit status {e.returncode}: {why}") from e
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        raise KubeconfigError(f"user exec {command}: {e}") from e
    out: dict[str, Any] = {}
    if status.get("token"):
        out["token"] = status["token"]
    if status.get("clientCertificateData") and status.get("clientKeyData"):
        out["client-certificate-data"] = base64.b64encode(status["clientCertificateData"].encode()).decode()
        out["client-key-data"] = base64.b64encode(status["clientKeyData"].encode()).decode()
    if not out:
        raise KubeconfigError(f"user exec {command}: its ExecCredential has no token and no certificate")
    return out
