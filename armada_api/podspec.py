"""Kubernetes protobuf messages (the ``generated.proto`` types Armada's API carries) as the
Kubernetes JSON the API server takes. Pure.

The messages name their fields by their JSON names and are proto2 (only what the client set is
present), so the set fields are the JSON object, but for the types the API server writes otherwise
than protobuf's JSON mapping: Quantity and IntOrString as their scalar, Time and MicroTime as
RFC 3339, Duration as its string, 64-bit integers as numbers, bytes as base64; and the structs Go
embeds inline (a volume's source, a reference's name, a probe's handler), which protobuf nests.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

_APIMACHINERY = "k8s.io.apimachinery.pkg"
QUANTITY = f"{_APIMACHINERY}.api.resource.Quantity"
INT_OR_STRING = f"{_APIMACHINERY}.util.intstr.IntOrString"
TIME = f"{_APIMACHINERY}.apis.meta.v1.Time"
MICRO_TIME = f"{_APIMACHINERY}.apis.meta.v1.MicroTime"
DURATION = f"{_APIMACHINERY}.apis.meta.v1.Duration"
#: messages written as a scalar, not an object
SCALARS = frozenset({QUANTITY, INT_OR_STRING, TIME, MICRO_TIME, DURATION})
#: Go structs embedded inline (`json:",inline"`) are fields of their own in protobuf, named after
#: their type (or, for a probe's, after the field it was once): their fields are the parent's in JSON.
INLINE = frozenset(
    {
        ("volumeSource", "k8s.io.api.core.v1.VolumeSource"),
        ("localObjectReference", "k8s.io.api.core.v1.LocalObjectReference"),
        ("handler", "k8s.io.api.core.v1.ProbeHandler"),
        ("ephemeralContainerCommon", "k8s.io.api.core.v1.EphemeralContainerCommon"),
    }
)


def to_json(message: Message) -> Any:
    """The Kubernetes JSON value of a message (an object, or a scalar for the types above)."""
    name = message.DESCRIPTOR.full_name
    if name in SCALARS:
        return _scalar(name, message)
    out: dict[str, Any] = {}
    for field, value in message.ListFields():
        if is_inline(field):
            out.update(to_json(value))
        else:
            out[field.name] = _field(field, value)
    return out


def is_inline(field: FieldDescriptor) -> bool:
    return field.message_type is not None and (field.name, field.message_type.full_name) in INLINE


def _field(field: FieldDescriptor, value: Any) -> Any:
    entry = field.message_type if field.type == FieldDescriptor.TYPE_MESSAGE else None
    if entry is not None and entry.GetOptions().map_entry:
        value_field = entry.fields_by_name["value"]
        return {str(k): _single(value_field, v) for k, v in value.items()}
    if field.is_repeated:
        return [_single(field, v) for v in value]
    return _single(field, value)


def _single(field: FieldDescriptor, value: Any) -> Any:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return to_json(value)
    if field.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode()
    return value  # ints stay ints (protobuf's JSON mapping would quote 64-bit ones), strings, bools


def _scalar(name: str, message: Any) -> Any:
    if name == QUANTITY:
        return str(message.string)
    if name == INT_OR_STRING:
        return str(message.strVal) if message.type == 1 else int(message.intVal)
    if name == DURATION:
        return str(message.duration)
    moment = datetime.fromtimestamp(message.seconds, UTC)
    if name == MICRO_TIME:
        return moment.replace(microsecond=message.nanos // 1000).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
