"""The type of a Kubernetes object as JSON, as the API server sends it and the bridge writes it."""

from collections.abc import Mapping
from typing import Any

#: an object (or a part of one) the code may change or build
Obj = dict[str, Any]
#: an object the code only reads
ObjView = Mapping[str, Any]
