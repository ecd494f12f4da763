"""The edges of a request body, through the real server: size (413 before the rest is read),
nesting (400, never a 500), repeated keys and quantities an int64 cannot hold, as the API server."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from hub.api.limits import MAX_REQUEST_BYTES

from .conftest import Env

JOBS = "/apis/batch/v1/namespaces/default/jobs"


def _job(name: str, cpu: str = "1", **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"template": {"spec": {"containers": [container], "restartPolicy": "Never"}}, **spec}}


def _send_head(env: Env, head: str, first: bytes) -> bytes:
    """Send the request line, headers and only the start of the body; return what the server answers."""
    host, port = env.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head.encode() + first)
        reply = b""
        while b"\r\n\r\n" not in reply or not reply.rstrip().endswith(b"}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            reply += chunk
    return reply


def test_a_body_announced_past_the_limit_is_413_without_reading_it(env: Env) -> None:
    head = (f"POST {JOBS} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {20 * 1024 * 1024}\r\n\r\n")
    reply = _send_head(env, head, b'{"apiVersion":')  # 14 of 20 MiB: the server must answer anyway
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    status = json.loads(reply.split(b"\r\n\r\n", 1)[1])
    assert status["reason"] == "RequestEntityTooLarge" and status["message"] == f"Request entity too large: limit is {MAX_REQUEST_BYTES}"


def test_a_chunked_body_past_the_limit_is_413(env: Env) -> None:
    body = json.dumps({**_job("big"), "metadata": {"name": "big", "annotations": {"a": "x" * (MAX_REQUEST_BYTES + 10)}}})
    status, _, out = env.raw("POST", JOBS, body)
    assert status == 413 and out["reason"] == "RequestEntityTooLarge"
    assert env.store.get("Job", "default", "big") is None


def test_a_body_just_under_the_limit_is_read(env: Env) -> None:
    body = json.dumps({**_job("fits"), "metadata": {"name": "fits", "annotations": {"a": "x" * (200 * 1024)}}})
    status, _, _ = env.raw("POST", JOBS, body)
    assert status == 201


@pytest.mark.parametrize("levels", [101, 900, 5000])
def test_deep_nesting_is_400_not_500(env: Env, levels: int) -> None:
    deep: Any = {"x": 1}
    for _ in range(levels):
        deep = {"a": deep}
    body = json.dumps(_job("deep", nested=deep)) if levels < 1000 else (
        '{"kind":"Job","spec":' + '{"a":' * levels + "1" + "}" * levels + "}")
    status, _, out = env.raw("POST", JOBS, body)
    assert status == 400 and out["reason"] == "BadRequest", out
    assert "nested deeper than 100 levels" in out["message"]


def test_repeated_keys_are_refused_under_strict_and_warned_otherwise(env: Env) -> None:
    text = json.dumps(_job("dup"))[:-1] + ', "metadata": {"name": "dup2"}}'
    status, _, out = env.raw("POST", JOBS, text, query=[("fieldValidation", "Strict")])
    assert status == 400 and out["message"] == 'strict decoding error: duplicate field "metadata"', out
    status, headers, created = env.raw("POST", JOBS, text, query=[("fieldValidation", "Warn")])
    assert status == 201 and created["metadata"]["name"] == "dup2"  # the last value wins, as in Go
    assert 'duplicate field \\"metadata\\"' in headers.get("Warning", "")


@pytest.mark.parametrize("cpu", ["1e400", "1e19", "100Ei", "1" * 5000])
def test_a_quantity_past_int64_is_refused(env: Env, cpu: str) -> None:
    status, _, out = env.raw("POST", JOBS, _job("huge", cpu))
    assert status == 422 and out["reason"] == "Invalid", out
    assert "spec.template.spec.containers[0].resources.requests[cpu]" in out["message"]
    assert env.store.get("Job", "default", "huge") is None


def test_yaml_whose_aliases_expand_past_a_million_nodes_is_400(env: Env) -> None:
    """A few hundred bytes of nested aliases would be 10**8 nodes for whatever walks the body."""
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    text = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: bomb}\n" + "\n".join(lines) + "\n"
    status, _, out = env.raw("PATCH", f"{JOBS}/bomb", text, content_type="application/apply-patch+yaml",
                             query=[("fieldManager", "me")])
    assert status == 400 and "expands to more than 1000000 nodes" in out["message"], out
