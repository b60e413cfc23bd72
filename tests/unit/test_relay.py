"""Relays (pure parts): which front pods get one and on which ports, the relay pod, and what the
vkubelet's relay endpoint accepts."""

from __future__ import annotations

import base64

import pytest

from armada_bridge import keys
from tests.framework.pods import pod
from vkubelet import relay_pods
from vkubelet.relay_pods import RelaySettings
from vkubelet.relay_server import BadRequest, RelayTarget, authorize, parse_connect

SETTINGS = RelaySettings(
    namespace=keys.SYSTEM_NAMESPACE,
    image="bridge:dev",
    endpoint_host="10.1.0.1",
    endpoint_port=10262,
    placement={
        "tolerations": [{"key": "k", "operator": "Exists"}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "real", "operator": "Exists"}]}]
                }
            }
        },
    },
)
REAL = {"key": "real", "operator": "Exists"}


def _head() -> dict[str, object]:
    return pod(
        "head",
        labels={"ray.io/node-type": "head", "ray.io/cluster": "rc"},
        spec={
            "containers": [
                {
                    "name": "ray-head",
                    "ports": [
                        {"name": "gcs", "containerPort": 6379},
                        {"name": "dashboard", "containerPort": 8265},
                        {"name": "dns", "containerPort": 53, "protocol": "UDP"},
                    ],
                }
            ]
        },
    )


def _service(name: str, selector: dict[str, str], ports: list[dict[str, object]], namespace: str = "team-a"):  # type: ignore[no-untyped-def]
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": selector, "ports": ports},
    }


def test_only_a_pod_a_service_of_its_namespace_selects_gets_a_relay() -> None:
    head = _head()
    assert relay_pods.relay_ports(head, []) == ()
    elsewhere = _service("svc", {"ray.io/cluster": "rc"}, [{"port": 80}], namespace="team-b")
    no_selector = _service("external", {}, [{"port": 80}])
    other = _service("svc", {"ray.io/cluster": "other"}, [{"port": 80}])
    assert relay_pods.relay_ports(head, [elsewhere, no_selector, other]) == ()


def test_a_relay_listens_on_the_pods_tcp_ports_and_the_services_target_ports() -> None:
    head = _head()
    svc = _service(
        "rc-head-svc",
        {"ray.io/node-type": "head", "ray.io/cluster": "rc"},
        [
            {"name": "dashboard", "port": 80, "targetPort": "dashboard"},  # named: the container's 8265
            {"name": "client", "port": 10001},  # no targetPort: the port
            {"name": "metrics", "port": 8080, "targetPort": "8081"},
            {"name": "dns", "port": 53, "protocol": "UDP"},  # not TCP: not relayed
            {"name": "unknown", "port": 9, "targetPort": "nowhere"},  # a name the pod lacks
        ],
    )
    assert relay_pods.relay_ports(head, [svc]) == (6379, 8081, 8265, 10001)


def test_the_relay_pod_carries_no_label_of_the_pod_no_credential_and_stays_off_virtual_nodes() -> None:
    head = _head()
    relay = relay_pods.relay_pod(head, (6379, 8265), "tok", SETTINGS)
    md, spec = relay["metadata"], relay["spec"]
    assert md["name"] == "relay-uid-head" and md["namespace"] == keys.SYSTEM_NAMESPACE
    assert md["labels"] == {
        keys.RELAY_FOR: "uid-head",
        keys.COMPONENT_LABEL: keys.RELAY_COMPONENT,
        keys.MANAGED_BY_LABEL: keys.MANAGED_BY_VALUE,
    }
    assert md["annotations"][keys.RELAY_FRONT_POD] == "team-a/head"
    assert relay_pods.relay_token(relay) == "tok"
    assert (
        spec["automountServiceAccountToken"] is False
        and spec["tolerations"] == SETTINGS.placement["tolerations"]
    )
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    not_virtual = {"key": keys.NODE_TYPE_LABEL, "operator": "NotIn", "values": [keys.NODE_TYPE_VIRTUAL]}
    assert terms == [{"matchExpressions": [REAL, not_virtual]}]
    (c1, c2) = spec["containers"]
    assert c1["command"] == ["socat"] and c1["ports"] == [{"containerPort": 6379, "protocol": "TCP"}]
    assert c1["args"] == [
        "TCP-LISTEN:6379,fork,reuseaddr,backlog=256",
        "PROXY:10.1.0.1:uid-head:6379,proxyport=10262,proxyauth=relay:tok",
    ]
    assert c2["name"] == "port-8265"
    # The placement given is not changed by making a relay from it.
    again = relay_pods.relay_pod(head, (6379, 8265), "tok", SETTINGS)["spec"]["affinity"]
    assert again == spec["affinity"]


def test_a_relay_made_for_other_ports_or_settings_or_ending_is_not_current() -> None:
    relay = relay_pods.relay_pod(_head(), (8265,), "tok", SETTINGS)
    assert relay_pods.is_current(relay, (8265,), SETTINGS)
    assert not relay_pods.is_current(relay, (8265, 6379), SETTINGS)
    assert not relay_pods.is_current(relay, (8265,), RelaySettings(**{**SETTINGS.__dict__, "image": "new"}))
    relay["status"] = {"phase": "Failed"}
    assert not relay_pods.is_current(relay, (8265,), SETTINGS)


def test_a_front_pod_shows_its_relays_addresses_once_every_relay_container_runs() -> None:
    relay = relay_pods.relay_pod(_head(), (6379, 8265), "tok", SETTINGS)
    none = dict.fromkeys(relay_pods.ADDRESS_FIELDS)
    assert relay_pods.relay_addresses(None) == none
    relay["status"] = {
        "podIP": "10.1.2.3",
        "podIPs": [{"ip": "10.1.2.3"}],
        "hostIP": "10.1.0.30",
        "hostIPs": [{"ip": "10.1.0.30"}],
        "containerStatuses": [{"state": {"running": {}}}, {"state": {"waiting": {}}}],
    }
    assert relay_pods.relay_addresses(relay) == none
    relay["status"]["containerStatuses"][1] = {"state": {"running": {}}}
    assert relay_pods.relay_addresses(relay)["podIP"] == "10.1.2.3"


def _connect(target: str, user: str = "relay", token: str = "tok") -> bytes:
    credentials = base64.b64encode(f"{user}:{token}".encode()).decode()
    return f"CONNECT {target} HTTP/1.0\r\nProxy-Authorization: Basic {credentials}".encode()


def test_the_relay_endpoint_reads_a_relays_connect() -> None:
    assert parse_connect(_connect("uid-head:8265")) == ("uid-head", 8265, "tok")


@pytest.mark.parametrize(
    ("head", "status"),
    [
        (b"GET / HTTP/1.1\r\nHost: x", 405),
        (_connect("uid-head"), 400),
        (_connect("uid-head:99999"), 400),
        (b"CONNECT uid-head:8265 HTTP/1.0", 407),
        (_connect("uid-head:8265", user="admin"), 407),
        (b"CONNECT uid-head:8265 HTTP/1.0\r\nProxy-Authorization: Basic !!!", 407),
    ],
)
def test_the_relay_endpoint_refuses_what_is_not_a_relays_connect(head: bytes, status: int) -> None:
    with pytest.raises(BadRequest) as e:
        parse_connect(head)
    assert e.value.status == status


def test_only_the_pods_own_relay_reaches_it_and_only_on_its_ports() -> None:
    target = RelayTarget(remote=None, namespace="team-a", pod="head", token="tok", ports=frozenset({8265}))  # type: ignore[arg-type]
    authorize(target, 8265, "tok")
    for t, port, token in ((None, 8265, "tok"), (target, 8265, "other"), (target, 22, "tok")):
        with pytest.raises(BadRequest) as e:
            authorize(t, port, token)
        assert e.value.status == 403
