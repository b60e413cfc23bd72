"""bench/writes.py: the API server's writes by verb and resource, per side."""

from __future__ import annotations

import pytest

from bench.writes import ALL, Sample, rates, spent, write_counts

METRICS = """\
# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 600
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 590
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 10
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 42
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 7
apiserver_request_total{code="0",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="WATCH",version="v1"} 3
# HELP apiserver_request_duration_seconds nothing counted here
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{verb="POST",le="+Inf"} 5
apiserver_request_duration_seconds_count{verb="POST"} 5
apiserver_request_duration_seconds_sum{verb="POST"} 1.5
"""


def test_writes_are_counted_by_verb_and_resource_over_every_code() -> None:
    assert write_counts(METRICS) == {
        "POST pods/binding": 600,
        "POST pods": 600,
        "PUT leases.coordination.k8s.io": 42,
    }


def test_spent_per_side_less_the_rest_and_summed() -> None:
    before = Sample({"front": write_counts(""), "remotes": write_counts(METRICS)}, at=0.0)
    after = Sample(
        {"front": write_counts(METRICS), "remotes": write_counts(METRICS.replace("} 42", "} 52"))}, at=10.0
    )
    out = spent(before, after, idle={"remotes PUT leases.coordination.k8s.io": 0.5})
    assert out["front POST pods"] == 600 and out["front POST pods/binding"] == 600
    assert out["remotes PUT leases.coordination.k8s.io"] == pytest.approx(5.0)  # 10, less 0.5/s over 10 s
    assert out[f"front {ALL}"] == 1242 and out[f"remotes {ALL}"] == pytest.approx(5.0)
    assert rates(before, after)["remotes PUT leases.coordination.k8s.io"] == pytest.approx(1.0)
    assert not any(k.endswith(ALL) for k in rates(before, after))
