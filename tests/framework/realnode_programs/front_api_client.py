"""Run inside a remote pod: with its own ServiceAccount token, the front CA and the front endpoint the
vkubelet gave it (the in-cluster configuration every Kubernetes client reads), create a ConfigMap,
read it back at the API's in-cluster name (`https://kubernetes.default.svc`, port 443, as Spark's
driver calls it), then create a pod that the bridge must queue and admit like any other. Standard
library only."""

import json
import os
import ssl
import sys
import urllib.request
from pathlib import Path

SA = "/var/run/secrets/kubernetes.io/serviceaccount"
host, port = os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"]
namespace = Path(SA, "namespace").read_text().strip()
token = Path(SA, "token").read_text().strip()
context = ssl.create_default_context(cafile=f"{SA}/ca.crt")
child = json.loads(sys.argv[1])


def call(path: str, body: dict | None = None, base: str = f"https://{host}:{port}") -> dict:
    request = urllib.request.Request(
        f"{base}{path}",
        data=json.dumps(body).encode() if body is not None else None,
        method="POST" if body is not None else "GET",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, context=context, timeout=30) as response:
        return json.loads(response.read())


made = call(
    f"/api/v1/namespaces/{namespace}/configmaps",
    {"metadata": {"name": "from-inside"}, "data": {"written-by": os.environ["HOSTNAME"]}},
)
print("created configmap", made["metadata"]["name"], "uid", made["metadata"]["uid"], flush=True)
read = call(f"/api/v1/namespaces/{namespace}/configmaps/from-inside", base="https://kubernetes.default.svc")
print("read at kubernetes.default.svc: uid", read["metadata"]["uid"], flush=True)
made = call(f"/api/v1/namespaces/{namespace}/pods", child)
print("created pod", made["metadata"]["name"], flush=True)
