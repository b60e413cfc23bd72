"""The kubeconfig loader: what each form of credential becomes, what is refused, and that a client
certificate given inline is really presented (a TLS handshake on loopback against a server that
requires one)."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from armada_bridge import certs
from armada_bridge.kube.kubeconfig import KubeconfigError, from_dict, in_cluster, load_config

pytestmark = pytest.mark.unit


def config(cluster: dict[str, Any], user: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "clusters": [{"name": "k", "cluster": cluster}],
        "users": [{"name": "u", "user": user or {}}],
    }


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp_path = tmp_path_factory.mktemp("pki")
    ca = certs.certificate_authority(tmp_path, "ca", "/CN=test-ca")
    server = certs.ca_and_serving(tmp_path / "serving", ["test-serving-ca"], ["127.0.0.1"])
    client = certs.client_certificate(tmp_path, "client", "/CN=someone", ca)
    return {"ca": ca[0], "client": client[0], "client_key": client[1], **server}


def b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def test_a_file_with_relative_paths_and_a_token_file(pki: dict[str, Path]) -> None:
    tmp_path = pki["ca"].parent
    (tmp_path / "token").write_text("t0")
    cfg = config(
        {"server": "https://127.0.0.1:6443/", "certificate-authority": "ca.crt"},
        {"client-certificate": "client.crt", "client-key": "client.key", "tokenFile": "token"},
    )
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(cfg))
    kc = load_config(path)
    assert kc.server == "https://127.0.0.1:6443"
    assert kc.token_file == str(tmp_path / "token")  # read by the client, again when it changes
    assert isinstance(kc.ssl_context, ssl.SSLContext)
    assert [c["subject"] for c in kc.ssl_context.get_ca_certs()] == [((("commonName", "test-ca"),),)]


def test_a_list_of_files_is_merged_as_kubectl_does(
    tmp_path: Path, pki: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "ca.crt").write_bytes(pki["ca"].read_bytes())
    first = config({"server": "https://first:1", "certificate-authority": "ca.crt"}, {"token": "t1"})
    second = config({"server": "https://second:2"}, {"token": "t2"})
    second["current-context"] = "other"
    second["contexts"].append({"name": "other", "context": {"cluster": "k", "user": "u"}})
    (tmp_path / "a" / "config").write_text(yaml.safe_dump(first))
    (tmp_path / "second").write_text(yaml.safe_dump(second))
    files = [tmp_path / "absent", tmp_path / "a" / "config", tmp_path / "second"]
    monkeypatch.setenv("KUBECONFIG", ":".join(map(str, files)))
    kc = load_config()  # the first file's context, cluster (its CA found beside it) and user
    assert kc.server == "https://first:1" and kc.headers == {"Authorization": "Bearer t1"}
    assert isinstance(kc.ssl_context, ssl.SSLContext) and kc.ssl_context.get_ca_certs()
    assert load_config(context="other").server == "https://first:1"  # cluster k: the first file's


def test_tokens_basic_auth_and_no_credentials(pki: dict[str, Path]) -> None:
    cluster = {"server": "https://h:1", "certificate-authority-data": b64(pki["ca"])}
    assert from_dict(config(cluster, {"token": "abc"}), base=Path("/")).headers == {
        "Authorization": "Bearer abc"
    }
    basic = from_dict(config(cluster, {"username": "a", "password": "b"}), base=Path("/"))
    assert basic.headers == {"Authorization": "Basic " + base64.b64encode(b"a:b").decode()}
    bare = from_dict(config(cluster, {"token": "abc"}), base=Path("/"), credentials=False)
    assert bare.headers == {} and bare.token_file is None
    plain = from_dict(config({"server": "http://h:8080"}, {"token": "abc"}), base=Path("/"))
    assert plain.ssl_context is True


def test_an_exec_plugin_runs_once_and_its_token_is_used(tmp_path: Path, pki: dict[str, Path]) -> None:
    plugin = tmp_path / "plugin"
    credential = {"apiVersion": "client.authentication.k8s.io/v1", "status": {"token": "from-exec"}}
    plugin.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        "info = json.loads(os.environ['KUBERNETES_EXEC_INFO'])\n"
        "assert info['kind'] == 'ExecCredential' and os.environ['EXTRA'] == 'x' and sys.argv[1] == 'a'\n"
        f"print(json.dumps({credential!r}))\n"
    )
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    exec_spec = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": "./plugin",
        "args": ["a"],
        "env": [{"name": "EXTRA", "value": "x"}],
    }
    cluster = {"server": "https://h:1", "certificate-authority-data": b64(pki["ca"])}
    kc = from_dict(config(cluster, {"exec": exec_spec}), base=tmp_path)
    assert kc.headers == {"Authorization": "Bearer from-exec"}
    with pytest.raises(KubeconfigError, match="user exec"):
        from_dict(config(cluster, {"exec": {**exec_spec, "args": ["b"]}}), base=tmp_path)


@pytest.mark.parametrize(
    ("cluster", "user", "message"),
    [
        ({"server": "https://h:1", "proxy-url": "http://p:3128"}, {}, "proxy-url"),
        ({"server": "https://h:1", "tls-server-name": "x"}, {}, "tls-server-name"),
        ({"server": "https://h:1"}, {"auth-provider": {"name": "oidc"}}, "auth-provider"),
        ({"server": "https://h:1"}, {"as": "admin"}, "'as'"),
        ({"server": "h:1"}, {}, "not an http"),
        ({"server": "https://h:1", "certificate-authority-data": "%%%"}, {}, "not base64"),
        ({"server": "https://h:1"}, {"client-key-data": "QUJD"}, "needs its key"),
        ({"server": "https://h:1", "certificate-authority": "/nonexistent/ca.crt"}, {}, "No such file"),
    ],
)
def test_what_cannot_be_honoured_is_refused_by_name(
    cluster: dict[str, Any], user: dict[str, Any], message: str
) -> None:
    with pytest.raises(KubeconfigError, match=message):
        from_dict(config(cluster, user), base=Path("/"))


def test_contexts_are_chosen_by_name_or_current_context() -> None:
    cfg = config({"server": "https://h:1"})
    cfg["contexts"].append({"name": "other", "context": {"cluster": "k2"}})
    cfg["clusters"].append({"name": "k2", "cluster": {"server": "https://other:2"}})
    assert from_dict(cfg, base=Path("/")).server == "https://h:1"
    assert from_dict(cfg, "other", base=Path("/")).server == "https://other:2"
    with pytest.raises(KubeconfigError, match="no context named 'absent'"):
        from_dict(cfg, "absent", base=Path("/"))
    with pytest.raises(KubeconfigError, match="no current-context"):
        from_dict({**cfg, "current-context": ""}, base=Path("/"))


def test_in_cluster_needs_the_service_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(KubeconfigError, match="not in a pod"):
        in_cluster()


def test_an_inline_client_certificate_is_presented(pki: dict[str, Path]) -> None:
    """Inline data goes to the TLS context without a file on disk; a server that requires a client
    certificate from this CA accepts the handshake and sees the certificate's subject."""
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(pki["ca"]))
    server_ctx.load_cert_chain(pki["tls.crt"], pki["tls.key"])
    server_ctx.verify_mode = ssl.CERT_REQUIRED
    seen: list[Any] = []

    async def run() -> None:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            seen.append(writer.get_extra_info("peercert"))
            writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=server_ctx)
        port = server.sockets[0].getsockname()[1]
        user = {"client-certificate-data": b64(pki["client"]), "client-key-data": b64(pki["client_key"])}
        kc = from_dict(
            config(
                {"server": f"https://127.0.0.1:{port}", "certificate-authority-data": b64(pki["ca.crt"])},
                user,
            ),
            base=Path("/nonexistent"),
        )
        assert isinstance(kc.ssl_context, ssl.SSLContext)
        _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=kc.ssl_context)
        await asyncio.sleep(0.05)
        writer.close()
        server.close()
        await server.wait_closed()

    asyncio.run(run())
    assert seen and dict(x[0] for x in seen[0]["subject"]) == {"commonName": "someone"}


def test_exec_credential_json_is_checked(tmp_path: Path) -> None:
    plugin = tmp_path / "plugin"
    plugin.write_text(f"#!{sys.executable}\nprint({json.dumps(json.dumps({'status': {}}))})\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(KubeconfigError, match="no token and no certificate"):
        from_dict(config({"server": "https://h:1"}, {"exec": {"command": str(plugin)}}), base=tmp_path)


def test_the_server_is_verified_against_the_named_ca_or_not_at_all_when_told(pki: dict[str, Path]) -> None:
    """The serving CA named: the handshake succeeds; another CA, or none (the system's roots):
    refused; insecure-skip-tls-verify: succeeds without a CA."""
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(pki["tls.crt"], pki["tls.key"])

    async def handshake(cluster: dict[str, Any]) -> bool:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=server_ctx)
        port = server.sockets[0].getsockname()[1]
        kc = from_dict(config({"server": f"https://127.0.0.1:{port}", **cluster}), base=Path("/nonexistent"))
        assert isinstance(kc.ssl_context, ssl.SSLContext)
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=kc.ssl_context)
            writer.close()
            return True
        except ssl.SSLCertVerificationError:
            return False
        finally:
            server.close()
            await server.wait_closed()

    async def run() -> list[bool]:
        return [
            await handshake({"certificate-authority-data": b64(pki["ca.crt"])}),
            await handshake({"certificate-authority-data": b64(pki["ca"])}),
            await handshake({}),
            await handshake({"insecure-skip-tls-verify": True}),
        ]

    assert asyncio.run(run()) == [True, False, False, True]
