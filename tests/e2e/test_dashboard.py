"""The dashboard in a real headless Chromium, on the extender's secure port with a bearer token of
a ServiceAccount bound to the shipped reader role: the queues' chart draws, the gangs view filters
and shows why a gang that cannot fit waits, a gang's story lists its Events, and the clusters view
shows both remotes. Its scene is a team's: namespace `ml-research`, queues `team-vision` and
`team-nlp`, a training gang running and a fine-tuning gang too big to fit. With
ARMADA_BRIDGE_DOCS_IMAGES=1 its screenshots replace docs/img/'s (docs/dashboard.md shows them)."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from armada_bridge import keys
from devenv.names import FRONT
from devenv.processes.environment import Environment
from devenv.versions import REPO_ROOT
from tests.framework.bridge import REMOTES, Api, pod, wait_running
from tests.framework.browser import chromium, headless_page
from tests.framework.kube import role_binding

IMG = REPO_ROOT / "docs" / "img"
READER = "armada-bridge-extender-reader"
SCENE = "ml-research"  # the namespace; its two queues:
VISION, NLP = "team-vision", "team-nlp"


def _reader_role() -> dict[str, object]:
    docs = yaml.safe_load_all((REPO_ROOT / "manifests" / "extender" / "rbac.yaml").read_text())
    return next(d for d in docs if d and d["kind"] == "ClusterRole" and d["metadata"]["name"] == READER)


@pytest.fixture
def reader_token(scene: str, cluster_api: Api) -> Iterator[str]:
    """A token of a ServiceAccount bound to (a copy of) the shipped reader role, removed after."""
    api = cluster_api(FRONT)
    core, rbac = k8s.CoreV1Api(api), k8s.RbacAuthorizationV1Api(api)
    name = f"dash-reader-{uuid.uuid4().hex[:6]}"
    role = _reader_role()
    role["metadata"] = {"name": name}
    rbac.create_cluster_role(role)
    try:
        rbac.create_cluster_role_binding(role_binding(name, name, "dash-reader", scene))
        core.create_namespaced_service_account(scene, {"metadata": {"name": "dash-reader"}})
        review = core.create_namespaced_service_account_token(
            "dash-reader", scene, {"spec": {"expirationSeconds": 900}}
        )
        yield str(review.status.token)
    finally:
        for delete in (rbac.delete_cluster_role_binding, rbac.delete_cluster_role):
            try:
                delete(name)
            except ApiException as e:
                if e.status != 404:
                    raise


@pytest.fixture
def scene(dev_env: Environment, cluster_api: Api) -> Iterator[str]:
    """Namespace `ml-research` in every cluster and the queues team-vision and team-nlp taking its
    pods, as a team would name them (whatever an earlier run left removed first, all removed after)."""
    clusters = dev_env.cluster_names()

    def remove() -> None:
        for q in (VISION, NLP):
            try:
                k8s.CustomObjectsApi(cluster_api(FRONT)).delete_cluster_custom_object(
                    keys.GROUP, "v1alpha1", "queues", q
                )
            except ApiException as e:
                if e.status != 404:
                    raise
        for c in clusters:
            core = k8s.CoreV1Api(cluster_api(c))
            try:
                core.delete_namespace(SCENE)
            except ApiException as e:
                if e.status != 404:
                    raise
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and any(
            SCENE in {n.metadata.name for n in k8s.CoreV1Api(cluster_api(c)).list_namespace().items}
            for c in clusters
        ):
            time.sleep(1)

    remove()
    for c in clusters:
        k8s.CoreV1Api(cluster_api(c)).create_namespace({"metadata": {"name": SCENE}})
    selector = {"matchLabels": {"kubernetes.io/metadata.name": SCENE}}
    for q in (VISION, NLP):
        k8s.CustomObjectsApi(cluster_api(FRONT)).create_cluster_custom_object(
            keys.GROUP,
            "v1alpha1",
            "queues",
            {
                "apiVersion": keys.API_VERSION,
                "kind": "Queue",
                "metadata": {"name": q},
                "spec": {"priorityFactor": 1, "namespaceSelector": selector},
            },
        )
    try:
        yield SCENE
    finally:
        remove()


@pytest.fixture
def images(tmp_path: Path) -> Path:
    """Where the screenshots go: docs/img with ARMADA_BRIDGE_DOCS_IMAGES=1, else the test's own."""
    return IMG if os.environ.get("ARMADA_BRIDGE_DOCS_IMAGES") == "1" else tmp_path


def _gang(name: str, size: int) -> dict[str, str]:
    return {keys.GANG_ID: name, keys.GANG_CARDINALITY: str(size)}


@pytest.mark.skipif(chromium() is None, reason="no chromium: hack/setup.sh installs it")
async def test_dashboard_in_a_browser(
    dev_env: Environment, scene: str, cluster_api: Api, reader_token: str, images: Path
) -> None:
    namespace, qa, qb = scene, VISION, NLP
    core = k8s.CoreV1Api(cluster_api(FRONT))
    for i in range(2):  # a gang that runs, in queue a
        core.create_namespaced_pod(
            namespace,
            pod(f"resnet-train-{i}", queue=qa, cpu="2", memory="8Gi", annotations=_gang("resnet-train", 2)),
        )
    for i in range(2):  # a gang no remote node can hold, in queue b: it waits, and says why
        core.create_namespaced_pod(
            namespace, pod(f"llm-finetune-{i}", queue=qb, cpu="1000", annotations=_gang("llm-finetune", 2))
        )
    wait_running(cluster_api, namespace, 2)

    base = f"https://127.0.0.1:{dev_env.port('webhook')}/dashboard/"
    async with headless_page(headers={"Authorization": f"Bearer {reader_token}"}) as page:
        # Queues: our two queues' cards, each with a chart of at least two samples per line.
        await page.goto(base + "#/queues")
        card = f"document.querySelector('section.queue[data-queue={json.dumps(qa)}]')"
        points = await page.wait_for(
            "queue a's chart with two samples",
            f"(() => {{ const c = {card}; if (!c) return 0; const n = [...c.querySelectorAll('polyline')]"
            ".map(p => +p.dataset.points); return n.length === 3 && Math.min(...n) >= 2 && n; })()",
            timeout=60,
        )
        assert points == [points[0]] * 3
        await page.wait_for(
            "queue a running its gang",
            f"{card}.querySelector('.running').textContent === '1'",
            timeout=30,
        )
        await page.evaluate(f"{card}.scrollIntoView()")
        await page.screenshot(images / "dashboard-queues.png")

        # Gangs and pods, filtered to our namespace: the waiting gang's reason, then the state filter.
        await page.goto(base + f"#/units?namespace={namespace}")
        rows = "[...document.querySelectorAll('#units tr.unit')]"
        await page.wait_for("both gangs listed", f"{rows}.length === 2")
        reason = await page.wait_for(
            "the big gang's reason",
            f"{rows}.find(r => r.dataset.name === 'armada/llm-finetune' && r.dataset.state === 'Waiting')"
            "?.querySelector('.reason').textContent",
        )
        assert "gang" in reason or "fit" in reason or "cpu" in reason, reason
        await page.evaluate(
            "(() => { const s = document.querySelector('select[name=state]'); s.value = 'Waiting';"
            " s.dispatchEvent(new Event('change')); })()"
        )
        shown = await page.wait_for(
            "only the waiting gang after filtering by state",
            f"location.hash.includes('state=Waiting') && {rows}.length === 1 && {rows}.map(r => r.dataset.name)",
        )
        assert shown == ["armada/llm-finetune"]
        await page.screenshot(images / "dashboard-waiting-gang.png")

        # The waiting gang's story: both members, the core's reason, their Events in time order.
        await page.evaluate(f"{rows}[0].querySelector('a').click()")
        await page.wait_for(
            "the gang's story",
            "document.querySelectorAll('section.member').length === 2"
            " && document.querySelectorAll('#events tbody tr').length > 0"
            " && !!document.querySelector('section.member .reason')",
        )
        times = await page.evaluate(
            "[...document.querySelectorAll('#events tbody tr')].map(r => r.cells[0].textContent)"
        )
        assert times == sorted(times, key=lambda t: t[:19]), times
        await page.screenshot(images / "dashboard-gang-story.png")

        # Remote clusters: both remotes, Ready, with what queue a holds there.
        await page.goto(base + "#/clusters")
        ready = await page.wait_for(
            "both remotes in the clusters view",
            "(() => { const c = [...document.querySelectorAll('section.cluster')]"
            ".filter(x => x.dataset.ready === 'True').map(x => x.dataset.cluster);"
            f" return {json.dumps(list(REMOTES))}.every(n => c.includes(n)) && c; }})()",
        )
        assert set(REMOTES) <= set(ready)
        assert await page.evaluate(
            f"[...document.querySelectorAll('section.cluster')].some(c => c.textContent.includes({json.dumps(qa)}))"
        )
        await page.screenshot(images / "dashboard-clusters.png")
