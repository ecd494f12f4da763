"""The Kubernetes store suite's harness, shared with the e2e test and the bench: the
stand-in API server as a process, a breakable proxy in front of it, stores on it."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from hub.store.kube import ApiClientTransport, KubeStore, KubeStoreOptions
from hub.store.kube.informer import InformerOptions

from .proxy import Proxy

ROOT = Path(__file__).resolve().parents[3]
REAL = os.environ.get("MKHUB_TEST_KUBECONFIG")


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler], tls: ssl.SSLContext | None = None) -> Iterator[str]:
    """A threaded HTTP(S) server of ``handler`` on a free loopback port, for as long as the block
    runs; its base URL."""
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if tls is not None:
        srv.socket = tls.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


@dataclass
class ApiServer:
    kubeconfig: Path
    url: str
    proc: subprocess.Popen[bytes] | None = None
    real: bool = False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_stand_in(data: Path, *, log_retention: int = 100_000, bookmark_interval: float = 0.5) -> ApiServer:
    data.mkdir(parents=True, exist_ok=True)
    log = (data / "apiserver.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "hub.bench.standin", str(data),
         "--log-retention", str(log_retention), "--bookmark-interval", str(bookmark_interval)],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while not (data / "port").exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"the stand-in API server did not start: {(data / 'apiserver.log').read_text()[-2000:]}")
        time.sleep(0.05)
    port = int((data / "port").read_text())
    return ApiServer(data / "kubeconfig", f"http://127.0.0.1:{port}", proc)


# The suite's dev-clusters keep few changes (kube-apiserver's watch cache is short too), so
# watches resumed late and continue pages meet 410 Expired and the re-list paths run.
SHORT_WATCH_WINDOW = 30


def start_dev_cluster(data: Path, *, watch_window: int = SHORT_WATCH_WINDOW) -> ApiServer:
    """``mkhub dev-cluster`` on a free loopback port (its kubeconfig appears once it serves)."""
    data.mkdir(parents=True, exist_ok=True)
    log = (data.parent / f"{data.name}-dev-cluster.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "hub.cli", "dev-cluster", "--data-dir", str(data), "--listen", "127.0.0.1:0",
         "--watch-window", str(watch_window)],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while not (data / "kubeconfig").exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"mkhub dev-cluster did not start: {log.name}")
        time.sleep(0.05)
    return ApiServer(data / "kubeconfig", _server_of(data / "kubeconfig"), proc)


def _server_of(kubeconfig: Path) -> str:
    cfg = yaml.safe_load(kubeconfig.read_text())
    current = next(c for c in cfg["contexts"] if c["name"] == cfg["current-context"])
    cluster = next(c for c in cfg["clusters"] if c["name"] == current["context"]["cluster"])
    return str(cluster["cluster"]["server"])


def proxied_kubeconfig(server: ApiServer, proxy: Proxy, out: Path) -> Path:
    """A copy of the server's kubeconfig that goes through ``proxy`` (TLS keeps its server name)."""
    cfg = yaml.safe_load(server.kubeconfig.read_text())
    current = next(c for c in cfg["contexts"] if c["name"] == cfg["current-context"])
    cluster = next(c for c in cfg["clusters"] if c["name"] == current["context"]["cluster"])["cluster"]
    url = urlsplit(cluster["server"])
    cluster["server"] = f"{url.scheme}://127.0.0.1:{proxy.port}"
    if url.scheme == "https":
        cluster.setdefault("tls-server-name", url.hostname)
    out.write_text(yaml.safe_dump(cfg))
    return out


def start_proxy(server: ApiServer) -> Proxy:
    url = urlsplit(server.url)
    return Proxy(url.hostname or "127.0.0.1", url.port or (443 if url.scheme == "https" else 80))


# The dev-cluster sends a bookmark every 10 s to an idle watch: declare a watch dead after 15 s of silence.
FAST_INFORMER = InformerOptions(watch_timeout=60, inactivity_timeout=15.0, backoff_initial=0.02, backoff_max=0.5)


def open_store(kubeconfig: Path, **informer: Any) -> KubeStore:
    opts = KubeStoreOptions(informer=dataclasses.replace(FAST_INFORMER, **informer) if informer else FAST_INFORMER)
    return KubeStore(ApiClientTransport.from_kubeconfig(kubeconfig), opts)


def wait_for(predicate: Callable[[], Any], timeout: float = 20.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def register_job_webhook(kubeconfig: Path, certs: Path, port: int) -> None:
    """Apply ``manifests/base/webhook.yaml`` with ``kubectl``, pointed at a hub serving the Job
    webhook on ``127.0.0.1:PORT`` (``mkhub serve --webhook-listen 127.0.0.1:PORT
    --webhook-tls-dir CERTS``; CERTS from ``mkhub certs``): the dev-cluster then calls it on
    every create of a queued Job, as an API server calls Kueue's webhook."""
    import base64

    config = yaml.safe_load((ROOT / "manifests/base/webhook.yaml").read_text())
    ca = base64.b64encode((certs / "ca.crt").read_bytes()).decode()
    for hook in config["webhooks"]:
        path = hook["clientConfig"]["service"]["path"]  # Kueue's path of each kind's webhook
        hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca}
    out = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), "apply", "-f", "-"],
                         input=yaml.safe_dump(config), capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"kubectl apply of the webhook configuration failed: {out.stderr}")


def count_batches(store: KubeStore, monkeypatch: Any) -> list[int]:
    """The sizes of the batches ``store`` sends through its transport's ``send_many`` from now on."""
    batches: list[int] = []
    send_many = store.transport.send_many  # type: ignore[attr-defined]

    def counting(reqs: list[Any], **kwargs: Any) -> Any:
        batches.append(len(reqs))
        return send_many(reqs, **kwargs)

    monkeypatch.setattr(store.transport, "send_many", counting)
    return batches
