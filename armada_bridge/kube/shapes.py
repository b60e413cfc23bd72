"""What an informer keeps of each object: the fields its readers use, with keys shared.

A cache holds thousands of objects parsed from JSON, each with its own copies of the same strings
(keys such as "metadata" and "resourceVersion", values such as "True", "ClusterFirst", a node's
name) and with fields nobody reads (a pod's environment, volumes, container statuses; every
object's managedFields): a pod parsed whole takes about 17 kB of Python objects. A :data:`Shape`
says what to keep, and :func:`shaped` makes the transform an
:class:`~armada_bridge.kube.informer.Informer` applies to each object before caching it, which keeps
that part with its keys and short strings interned (the whole pod: about 8.6 kB):

- ``True``: the whole value;
- a dict: the listed keys, each with its own shape; the key ``"*"`` gives the shape of every key not
  listed (without it, keys not listed are dropped); ``False`` drops a key that ``"*"`` would keep;
- a one-element list: that shape applied to every element of a list.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from armada_bridge.objects import Obj

Shape: TypeAlias = "bool | Mapping[str, Shape] | list[Shape]"

#: Every field but managedFields (often half an object's size, read by no one): the default.
WHOLE: Mapping[str, Shape] = {"*": True, "metadata": {"*": True, "managedFields": False}}


#: An object's identity only: apiVersion, kind, and metadata's name, namespace, uid and
#: resourceVersion (what :func:`shaped` always keeps).
IDENTITY: Mapping[str, Shape] = {"metadata": {}}

#: Strings up to this long are interned: names, labels, quantities, reasons, timestamps repeat
#: across the objects of a cache; longer ones (messages, JSON in annotations) rarely do.
INTERNED_LENGTH = 64


def _shared(value: Any) -> Any:
    """`value` rebuilt with its keys and short strings interned (one copy of each in the process)."""
    t = type(value)
    if t is str:
        return sys.intern(value) if len(value) <= INTERNED_LENGTH else value
    if t is dict:
        return {sys.intern(k): _shared(v) for k, v in value.items()}
    if t is list:
        return [_shared(v) for v in value]
    return value


def project(value: Any, shape: Shape) -> Any:
    """`value` cut to `shape`, its keys and short strings interned (a value that does not have the
    shape's form is kept whole)."""
    if shape is True:
        return _shared(value)
    if isinstance(shape, list):
        return [project(v, shape[0]) for v in value] if isinstance(value, list) else _shared(value)
    if isinstance(shape, Mapping) and isinstance(value, dict):
        rest = shape.get("*", False)
        out = {}
        for k, v in value.items():
            sub = shape.get(k, rest)
            if sub is not False:
                out[sys.intern(k)] = project(v, sub)
        return out
    return _shared(value)


def shaped(shape: Mapping[str, Shape]) -> Callable[[Obj], Obj]:
    """The informer transform keeping `shape` of each object, and always what the informer and
    every reader of a cache rely on: apiVersion, kind, and metadata's name, namespace, uid and
    resourceVersion."""
    md = shape.get("metadata", shape.get("*", {}))
    if md is False:
        raise ValueError("a shape must keep metadata")
    if isinstance(md, Mapping) and md.get("*", False) is not True:
        md = {**md, "name": True, "namespace": True, "uid": True, "resourceVersion": True}
    full: Shape = {**shape, "apiVersion": True, "kind": True, "metadata": md}

    def transform(obj: Obj) -> Obj:
        out: Obj = project(obj, full)
        return out

    return transform
