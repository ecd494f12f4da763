"""Fixtures of the Kubernetes store's suite: an API server to talk to, a proxy to break
connections with, and per-test names.

By default the server is ``mkhub dev-cluster`` (its own process) with a short watch
window (``--watch-window``, harness.SHORT_WATCH_WINDOW), so 410 Expired and the
re-lists it calls for happen as on a real cluster; a test that needs fast bookmarks
gets the stand-in of :mod:`hub.bench.standin` (hub.kubeapi over SQLite). With ``MKHUB_TEST_KUBECONFIG`` set, the same tests run
against that cluster instead (it needs mkhub's CRDs applied: ``kubectl apply -f
manifests/crds``); each test works in its own namespace and under its own name prefix,
and deletes what it made.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from hub.store.interface import NotFound, StoreError

from .harness import (  # noqa: F401 - re-exported for the tests
    REAL,
    ApiServer,
    _server_of,
    open_store,
    proxied_kubeconfig,
    start_dev_cluster,
    start_proxy,
    start_stand_in,
    wait_for,
)


@pytest.fixture
def api_factory(tmp_path: Path) -> Iterator[Callable[..., ApiServer]]:
    started: list[ApiServer] = []

    def make(**opts: Any) -> ApiServer:
        """The cluster under test: a dev-cluster (option: watch_window); with the stand-in's
        options (log_retention, bookmark_interval), the stand-in."""
        if REAL:
            return ApiServer(Path(REAL), _server_of(Path(REAL)), real=True)
        data = tmp_path / f"api{len(started)}"
        stand_in = {k: v for k, v in opts.items() if k != "watch_window"}
        server = start_stand_in(data, **stand_in) if stand_in else start_dev_cluster(data, **opts)
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


@pytest.fixture(scope="module")
def shared_dev_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    """One dev-cluster for a module's tests: each works in its own namespace, as on a real cluster."""
    if REAL:
        yield ApiServer(Path(REAL), _server_of(Path(REAL)), real=True)
        return
    server = start_dev_cluster(tmp_path_factory.mktemp("dev-cluster") / "api")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def api(api_factory: Callable[..., ApiServer], request: pytest.FixtureRequest) -> ApiServer:
    """The module's dev-cluster; a stand-in of the test's own with the options of an indirect
    parameter (``{"bookmark_interval": 0.5}``)."""
    opts = getattr(request, "param", {})
    return api_factory(**opts) if opts else request.getfixturevalue("shared_dev_cluster")


@dataclass
class Names:
    """Per-test namespace and name prefix, and cleanup of what a test created."""

    prefix: str
    namespace: str
    made: list[tuple[str, str, str]] = field(default_factory=list)

    def name(self, base: str) -> str:
        return f"{self.prefix}-{base}"


@pytest.fixture
def names(api: ApiServer) -> Iterator[Names]:
    prefix = f"kst{secrets.token_hex(3)}"
    names = Names(prefix, f"{prefix}-ns")
    store = open_store(api.kubeconfig)
    try:
        store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": names.namespace}})
        yield names
    finally:
        for kind in ("Workload", "Job", "LocalQueue", "ClusterQueue", "ResourceFlavor"):
            for obj in store.list(kind)[0]:
                meta = obj["metadata"]
                if meta["name"].startswith(prefix) or meta.get("namespace") == names.namespace:
                    with contextlib.suppress(NotFound, StoreError):
                        store.delete(kind, meta.get("namespace", ""), meta["name"])
        with contextlib.suppress(NotFound, StoreError):
            store.delete("Namespace", "", names.namespace)
        store.close()
        store.transport.close()


