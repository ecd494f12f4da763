"""A real hub/kubeapi server on 127.0.0.1 over a real SQLite store, and two black-box clients:
the official ``kubernetes`` Python client and ``/usr/bin/kubectl`` (skipped when absent, a failure in CI: tests/kubectl_tool.py)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import kubectl_tool
import kubernetes
import pytest

from hub.kubeapi import KubeAPI
from hub.service.apply import Applier, ensure_namespace
from hub.store import SQLiteStore

KUBECTL = kubectl_tool.KUBECTL
REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "manifests" / "samples"


class ServerThread:
    """KubeAPI on its own event loop in a background thread."""

    def __init__(self, store: SQLiteStore, **options: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="kubeapi-test", daemon=True)
        self.thread.start()
        self.api = KubeAPI(store, Applier(store).admit, **options)
        self.port = asyncio.run_coroutine_threadsafe(self.api.start("127.0.0.1", 0), self.loop).result(10)
        self.url = f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.api.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@dataclass
class Env:
    store: SQLiteStore
    server: ServerThread
    client: kubernetes.client.ApiClient

    @property
    def url(self) -> str:
        return self.server.url

    def custom(self) -> kubernetes.client.CustomObjectsApi:
        return kubernetes.client.CustomObjectsApi(self.client)

    def core(self) -> kubernetes.client.CoreV1Api:
        return kubernetes.client.CoreV1Api(self.client)

    def batch(self) -> kubernetes.client.BatchV1Api:
        return kubernetes.client.BatchV1Api(self.client)

    def raw(self, method: str, path: str, body: Any = None, *, content_type: str = "application/json",
            accept: str = "application/json", query: Sequence[tuple[str, str]] = ()) -> tuple[int, dict[str, Any], Any]:
        """One HTTP request through the client's transport: (status, headers, decoded JSON body)."""
        headers = {"Content-Type": content_type, "Accept": accept}
        url = self.url + path + ("?" + urlencode(list(query)) if query else "")
        data = body if isinstance(body, str | bytes) or body is None else json.dumps(body)
        response = self.client.rest_client.pool_manager.request(method, url, body=data, headers=headers)
        text = response.data.decode()
        try:
            decoded = json.loads(text) if text else None
        except ValueError:
            decoded = text
        return response.status, dict(response.headers), decoded


def make_store(path: Path, **kw: Any) -> SQLiteStore:
    store = SQLiteStore(path, **kw)
    ensure_namespace(store)
    return store


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    store = make_store(tmp_path / "hub.db")
    server = ServerThread(store, bookmark_interval=0.5, namespace_grace=1.0)
    config = kubernetes.client.Configuration()
    config.host = server.url
    client = kubernetes.client.ApiClient(config)
    try:
        yield Env(store, server, client)
    finally:
        client.close()
        server.close()
        store.close()


@dataclass
class Kubectl:
    kubeconfig: Path
    home: Path

    def __call__(self, *args: str, stdin: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home), "KUBECONFIG": str(self.kubeconfig)}
        return subprocess.run([KUBECTL, *args], input=stdin, capture_output=True, text=True, timeout=timeout, env=env, check=False)


def write_kubeconfig(path: Path, server: str) -> Path:
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: mkhub\n  cluster:\n    server: {server}\n"
        "users:\n- name: admin\n  user: {}\n"
        "contexts:\n- name: mkhub\n  context: {cluster: mkhub, user: admin}\n"
        "current-context: mkhub\n"
    )
    return path


def kubectl_or_skip() -> None:
    kubectl_tool.kubectl_or_skip(KUBECTL)


@pytest.fixture
def kubectl(env: Env, tmp_path: Path) -> Kubectl:
    kubectl_or_skip()
    home = tmp_path / "home"
    home.mkdir()
    return Kubectl(write_kubeconfig(tmp_path / "kubeconfig", env.url), home)
