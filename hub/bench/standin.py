"""A stand-in Kubernetes API server: hub.kubeapi over a SQLiteStore, as its own process.

    python -m hub.bench.standin DATA_DIR [--log-retention N] [--bookmark-interval S]

Writes DATA_DIR/port once listening and DATA_DIR/kubeconfig (plain HTTP on
127.0.0.1, no auth), and creates the ``default`` and ``kube-system`` namespaces
every cluster has. The Kubernetes store's test suite and ``mkhub bench kube`` run
against it (no job controller: ``mkhub dev-cluster`` adds that).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from pathlib import Path

KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: stand-in
  cluster:
    server: {url}
users:
- name: tester
  user: {{}}
contexts:
- name: stand-in
  context:
    cluster: stand-in
    user: tester
current-context: stand-in
"""


def write_kubeconfig(path: Path, url: str) -> Path:
    path.write_text(KUBECONFIG.format(url=url))
    return path


async def _main(data: Path, log_retention: int, bookmark_interval: float) -> None:
    from hub.kubeapi import KubeAPI
    from hub.service.apply import Applier, ensure_namespace
    from hub.store.sqlite import SQLiteStore

    store = SQLiteStore(data / "api.db", log_retention=log_retention)
    for namespace in ("default", "kube-system"):  # every cluster has them
        ensure_namespace(store, namespace)
    api = KubeAPI(store, Applier(store).admit, bookmark_interval=bookmark_interval)
    port = await api.start("127.0.0.1", 0)
    write_kubeconfig(data / "kubeconfig", f"http://127.0.0.1:{port}")
    (data / "port.tmp").write_text(str(port))
    (data / "port.tmp").rename(data / "port")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await api.stop()
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data", type=Path)
    parser.add_argument("--log-retention", type=int, default=100_000)
    parser.add_argument("--bookmark-interval", type=float, default=1.0)
    args = parser.parse_args()
    args.data.mkdir(parents=True, exist_ok=True)
    asyncio.run(_main(args.data, args.log_retention, args.bookmark_interval))


if __name__ == "__main__":
    main()
