"""The Armada API's pod spec conversion: Kubernetes protobuf messages to the API server's JSON."""

from __future__ import annotations

from typing import Any

import kubernetes.client.models as k8s_models
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core
from armada_client.k8s.io.apimachinery.pkg.api.resource.generated_pb2 import Quantity
from armada_client.k8s.io.apimachinery.pkg.util.intstr.generated_pb2 import IntOrString
from google.protobuf.descriptor import Descriptor

from armada_api.podspec import is_inline, to_json

CORE = "k8s.io.api.core.v1."
#: core types with no model of their own in the Kubernetes Python client (inlined, or renamed)
NO_MODEL = {"VolumeSource", "ProbeHandler", "EphemeralContainerCommon", "ResourceClaim"}


def _json_fields(d: Descriptor) -> list[tuple[str, Descriptor | None]]:
    """(JSON name, message type) of a message's fields, inline structs' fields lifted."""
    out: list[tuple[str, Descriptor | None]] = []
    for f in d.fields:
        if is_inline(f):
            out += _json_fields(f.message_type)
            continue
        t = f.message_type
        if t is not None and t.GetOptions().map_entry:
            t = t.fields_by_name["value"].message_type
        out.append((f.name, t))
    return out


def test_every_field_reachable_from_a_pod_spec_has_its_json_name() -> None:
    """Each protobuf field name (inline structs lifted) is the JSON name the Kubernetes Python
    client's model of that type uses: so the walk's output is what the API server reads."""
    seen: set[str] = set()
    wrong: list[str] = []
    checked = 0

    def walk(d: Descriptor) -> None:
        nonlocal checked
        if d.full_name in seen or not d.full_name.startswith(CORE):
            return
        seen.add(d.full_name)
        fields = _json_fields(d)
        model = getattr(k8s_models, "V1" + d.name, None)
        if model is None:
            assert d.name in NO_MODEL, f"no Kubernetes model for {d.name}"
        else:
            names = set(model.attribute_map.values())
            wrong.extend(f"{d.name}.{n}" for n, _ in fields if n not in names)
            checked += 1
        for _, t in fields:
            if t is not None:
                walk(t)

    walk(core.PodSpec.DESCRIPTOR)
    assert not wrong
    assert checked > 80


def test_quantities_int_or_strings_and_64_bit_integers_are_written_as_the_api_server_reads_them() -> None:
    spec = core.PodSpec(
        containers=[
            core.Container(
                name="main",
                image="busybox",
                command=["sh", "-c", "true"],
                resources=core.ResourceRequirements(
                    requests={"cpu": Quantity(string="500m"), "memory": Quantity(string="1Gi")},
                    limits={"cpu": Quantity(string="1")},
                ),
                ports=[core.ContainerPort(containerPort=8080, name="http")],
                readinessProbe=core.Probe(
                    handler=core.ProbeHandler(
                        httpGet=core.HTTPGetAction(path="/", port=IntOrString(type=1, strVal="http"))
                    ),
                    periodSeconds=5,
                ),
                livenessProbe=core.Probe(
                    handler=core.ProbeHandler(
                        tcpSocket=core.TCPSocketAction(port=IntOrString(type=0, intVal=8080))
                    )
                ),
                securityContext=core.SecurityContext(runAsUser=1000, privileged=False),
                envFrom=[
                    core.EnvFromSource(
                        configMapRef=core.ConfigMapEnvSource(
                            localObjectReference=core.LocalObjectReference(name="cm")
                        )
                    )
                ],
            )
        ],
        terminationGracePeriodSeconds=30,
        nodeSelector={"zone": "a"},
        tolerations=[core.Toleration(key="k", operator="Exists", effect="NoExecute", tolerationSeconds=60)],
        volumes=[
            core.Volume(
                name="scratch",
                volumeSource=core.VolumeSource(
                    emptyDir=core.EmptyDirVolumeSource(sizeLimit=Quantity(string="1Gi"))
                ),
            )
        ],
    )
    got: dict[str, Any] = to_json(spec)
    assert got == {
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "command": ["sh", "-c", "true"],
                "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1"}},
                "ports": [{"containerPort": 8080, "name": "http"}],
                "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 5},
                "livenessProbe": {"tcpSocket": {"port": 8080}},
                "securityContext": {"runAsUser": 1000, "privileged": False},
                "envFrom": [{"configMapRef": {"name": "cm"}}],
            }
        ],
        "terminationGracePeriodSeconds": 30,
        "nodeSelector": {"zone": "a"},
        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}],
        "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}}],
    }
    assert isinstance(got["terminationGracePeriodSeconds"], int)


def test_only_what_the_client_set_is_written() -> None:
    """proto2 presence: an explicit false or zero is kept, an unset field is absent."""
    spec = core.PodSpec(containers=[core.Container(name="c", image="i")], hostNetwork=False)
    assert to_json(spec) == {"containers": [{"name": "c", "image": "i"}], "hostNetwork": False}
