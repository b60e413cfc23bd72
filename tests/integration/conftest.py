"""The integration tests' fixtures beside the shared ones (tests/conftest.py): the vkubelet on the
shared environment, and clients of its clusters."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kubernetes import client as k8s

from devenv import binaries
from devenv.bridge import bridge, vkubelet_setup
from devenv.processes.environment import Environment

Api = Callable[[str], k8s.ApiClient]


@pytest.fixture(scope="module")
def vkubelet(dev_env: Environment) -> Environment:
    """The shared environment with the RemoteCluster CRD, its RemoteClusters and the vkubelet."""
    bins = binaries.expected()
    bridge.install_crds(bins, dev_env.kubeconfig("front"))
    vkubelet_setup.setup(dev_env, bins)
    return dev_env


@pytest.fixture
def front(vkubelet: Environment, cluster_api: Api) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(cluster_api("front"))


@pytest.fixture
def remote1(cluster_api: Api) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(cluster_api("remote-1"))


@pytest.fixture
def remote2(cluster_api: Api) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(cluster_api("remote-2"))
