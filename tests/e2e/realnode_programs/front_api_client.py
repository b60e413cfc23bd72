"""Run inside a remote pod: with its own ServiceAccount token, the front CA and the front endpoint the
vkubelet gave it (the in-cluster configuration every Kubernetes client reads), create a ConfigMap,
then a pod that the bridge must queue and admit like any other. Standard library only."""

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


def post(path: str, body: dict) -> dict:
    request = urllib.request.Request(
        f"https://{host}:{port}{path}",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, context=context, timeout=30) as response:
        return json.loads(response.read())


made = post(
    f"/api/v1/namespaces/{namespace}/configmaps",
    {"metadata": {"name": "from-inside"}, "data": {"written-by": os.environ["HOSTNAME"]}},
)
print("created configmap", made["metadata"]["name"], "uid", made["metadata"]["uid"], flush=True)
made = post(f"/api/v1/namespaces/{namespace}/pods", child)
print("created pod", made["metadata"]["name"], flush=True)
