"""The pure parts of the streaming relay: query translation and HTTP upgrade heads."""

from __future__ import annotations

import pytest
from multidict import MultiDict

from vkubelet import streams


def test_exec_query_from_kubelet_params() -> None:
    q = MultiDict(
        [
            ("command", "sh"),
            ("command", "-c"),
            ("command", "echo hi; exit 3"),
            ("input", "1"),
            ("output", "1"),
        ]
    )
    assert streams.api_query("exec", "main", q) == [
        ("container", "main"),
        ("stdin", "true"),
        ("stdout", "true"),
        ("command", "sh"),
        ("command", "-c"),
        ("command", "echo hi; exit 3"),
    ]


def test_attach_query_keeps_tty_and_api_names() -> None:
    q = MultiDict([("stdout", "true"), ("error", "1"), ("tty", "1"), ("command", "ignored")])
    assert streams.api_query("attach", "c", q) == [
        ("container", "c"),
        ("stdout", "true"),
        ("stderr", "true"),
        ("tty", "true"),
    ]


def test_false_flags_are_dropped() -> None:
    q = MultiDict([("input", "0"), ("output", "false"), ("error", "1")])
    assert streams.api_query("exec", "c", q) == [("container", "c"), ("stderr", "true")]


def test_port_forward_query_keeps_ports_only() -> None:
    q = MultiDict([("ports", "8080"), ("ports", "9090"), ("tty", "1")])
    assert streams.api_query("portForward", None, q) == [("ports", "8080"), ("ports", "9090")]
    # kube-apiserver passes a WebSocket client's ports to kubelets as `port`.
    q = MultiDict([("port", "8000"), ("name", "web"), ("_preload_content", "false")])
    assert streams.api_query("portForward", None, q) == [("ports", "8000")]


def test_is_upgrade() -> None:
    assert streams.is_upgrade({"Connection": "keep-alive, Upgrade", "Upgrade": "SPDY/3.1"})
    assert not streams.is_upgrade({"Connection": "keep-alive", "Upgrade": "SPDY/3.1"})
    assert not streams.is_upgrade({"Connection": "Upgrade"})


def test_parse_head() -> None:
    raw = (
        b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
        b"X-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n"
    )
    head = streams.parse_head(raw)
    assert head.status == 101
    assert head.reason == "Switching Protocols"
    assert head.headers["x-stream-protocol-version"] == "v4.channel.k8s.io"


def test_parse_head_rejects_garbage() -> None:
    with pytest.raises(ValueError):
        streams.parse_head(b"\x80\x03\x00\x01 spdy frame\r\n\r\n")


def test_request_head() -> None:
    head = streams.request_head(
        "POST",
        "127.0.0.1:6443",
        "/api/v1/namespaces/ns/pods/p/exec",
        [("command", "echo hi"), ("stdout", "true")],
        [("Upgrade", "SPDY/3.1"), ("X-Stream-Protocol-Version", "v4.channel.k8s.io")],
    )
    assert head == (
        b"POST /api/v1/namespaces/ns/pods/p/exec?command=echo+hi&stdout=true HTTP/1.1\r\n"
        b"Host: 127.0.0.1:6443\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n"
        b"Connection: Upgrade\r\nContent-Length: 0\r\n\r\n"
    )
