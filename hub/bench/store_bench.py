"""Store benchmark (``mkhub bench store``): write throughput, batched status writes,
reads and watch latency of the SQLite back end on a temporary file."""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hub.store.interface import Object
from hub.store.sqlite import SQLiteStore


def _workload(i: int) -> Object:
    """A Workload of realistic size (~1 KB of JSON)."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {
            "name": f"job-sample-{i:07d}",
            "namespace": f"team-{i % 16}",
            "labels": {"kueue.x-k8s.io/queue-name": "user-queue", "app": f"app-{i % 7}"},
            "annotations": {"kueue.x-k8s.io/job-uid": f"{i:032x}"},
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": f"sample-{i:07d}", "uid": f"{i:032x}"}
            ],
        },
        "spec": {
            "queueName": "user-queue",
            "priority": i % 3,
            "podSets": [
                {
                    "name": "main",
                    "count": 1 + i % 4,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "trainer",
                                    "image": "registry.example.com/ml/trainer:1.4.2",
                                    "args": ["--epochs", "3", "--batch", "256"],
                                    "resources": {
                                        "requests": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}
                                    },
                                }
                            ],
                            "restartPolicy": "Never",
                        }
                    },
                }
            ],
        },
    }


def _admitted(i: int) -> dict[str, Any]:
    return {
        "admission": {
            "clusterQueue": "cluster-queue",
            "podSetAssignments": [
                {"name": "main", "flavors": {"nvidia.com/gpu": "a100"}, "count": 1 + i % 4}
            ],
        },
        "conditions": [
            {
                "type": "QuotaReserved",
                "status": "True",
                "reason": "QuotaReserved",
                "message": "Quota reserved in ClusterQueue cluster-queue",
                "lastTransitionTime": "2025-01-01T00:00:00Z",
            }
        ],
    }


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, round(q * (len(sorted_values) - 1)))]


def _watch_latency(store: SQLiteStore, names: Sequence[str], namespaces: Sequence[str]) -> list[float]:
    """One write at a time; each sample is the time from the start of the write call
    to a watcher thread holding the event (so it includes the commit)."""
    _, rv = store.list("Nothing")
    watch = store.watch(kinds=["Workload"], since=rv)
    received = threading.Event()
    arrival = [0.0]

    def consume() -> None:
        for _ in watch:
            arrival[0] = time.perf_counter()
            received.set()

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    samples = []
    try:
        for i, (ns, name) in enumerate(zip(namespaces, names)):
            received.clear()
            obj = {"kind": "Workload", "metadata": {"name": name, "namespace": ns}, "status": {"tick": i}}
            start = time.perf_counter()
            store.update_status(obj)
            if not received.wait(10):
                raise RuntimeError("watch event not delivered within 10 s")
            samples.append(arrival[0] - start)
    finally:
        watch.close()
        thread.join(10)
    return samples


def run_bench(objects: int = 10_000, batch_size: int = 100, data_dir: str | None = None) -> dict[str, float]:
    """Measure the SQLite store on a temporary file under data_dir (default: the system temp dir)."""
    if objects < 1 or batch_size < 1:
        raise ValueError("objects and batch_size must be positive")
    manifests = [_workload(i) for i in range(objects)]
    with tempfile.TemporaryDirectory(prefix="mkhub-bench-", dir=data_dir) as tmp:
        path = Path(tmp) / "mkhub.db"
        store = SQLiteStore(path)
        try:
            commit_times = []
            start = time.perf_counter()
            for m in manifests:
                t = time.perf_counter()
                store.create(m)
                commit_times.append(time.perf_counter() - t)
            create_s = time.perf_counter() - start

            start = time.perf_counter()
            for lo in range(0, objects, batch_size):
                with store.batch():
                    for i in range(lo, min(lo + batch_size, objects)):
                        store.update_status({**manifests[i], "status": _admitted(i)})
            batched_s = time.perf_counter() - start

            start = time.perf_counter()
            for m in manifests:
                store.get("Workload", m["metadata"]["namespace"], m["metadata"]["name"])
            get_s = time.perf_counter() - start

            start = time.perf_counter()
            items, _ = store.list("Workload")
            list_s = time.perf_counter() - start
            assert len(items) == objects

            n = min(objects, 2000)
            latency = sorted(
                _watch_latency(
                    store,
                    [m["metadata"]["name"] for m in manifests[:n]],
                    [m["metadata"]["namespace"] for m in manifests[:n]],
                )
            )
        finally:
            store.close()

        start = time.perf_counter()  # a hub restart: open the file and list everything
        with SQLiteStore(path) as reopened:
            reopened.list("Workload")
        reopen_s = time.perf_counter() - start
        db_bytes = sum(p.stat().st_size for p in Path(tmp).iterdir())

    commit_times.sort()
    return {
        "objects": float(objects),
        "batch_size": float(batch_size),
        "writes_per_s": objects / create_s,
        "write_p50_ms": _percentile(commit_times, 0.50) * 1e3,
        "write_p99_ms": _percentile(commit_times, 0.99) * 1e3,
        "batched_writes_per_s": objects / batched_s,
        "gets_per_s": objects / get_s,
        "list_all_ms": list_s * 1e3,
        "watch_latency_p50_ms": _percentile(latency, 0.50) * 1e3,
        "watch_latency_p99_ms": _percentile(latency, 0.99) * 1e3,
        "reopen_and_list_ms": reopen_s * 1e3,
        "db_mb": db_bytes / 1e6,
    }


_ROWS = [
    ("single-write creates", "writes_per_s", "{:,.0f} /s"),
    ("  commit latency p50", "write_p50_ms", "{:.3f} ms"),
    ("  commit latency p99", "write_p99_ms", "{:.3f} ms"),
    ("batched status updates", "batched_writes_per_s", "{:,.0f} /s"),
    ("gets", "gets_per_s", "{:,.0f} /s"),
    ("list all", "list_all_ms", "{:,.1f} ms"),
    ("watch latency p50", "watch_latency_p50_ms", "{:.3f} ms"),
    ("watch latency p99", "watch_latency_p99_ms", "{:.3f} ms"),
    ("reopen + list all", "reopen_and_list_ms", "{:,.1f} ms"),
    ("database size", "db_mb", "{:.1f} MB"),
]


def format_table(result: dict[str, float]) -> str:
    lines = [
        f"SQLite store: {int(result['objects']):,} Workloads, batches of {int(result['batch_size'])} "
        f"(SQLite {sqlite3.sqlite_version}, WAL, synchronous=NORMAL)"
    ]
    lines += [f"  {label:<26}{fmt.format(result[key]):>16}" for label, key, fmt in _ROWS]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mkhub bench store", description=__doc__)
    parser.add_argument("--objects", type=int, default=10_000, help="Workloads to write (default 10000)")
    parser.add_argument("--batch-size", type=int, default=100, help="status updates per batch (default 100)")
    parser.add_argument("--data-dir", default=None, help="where to put the temporary database")
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of a table")
    args = parser.parse_args(argv)
    if args.objects < 1 or args.batch_size < 1:
        parser.error("--objects and --batch-size must be positive")
    result = run_bench(args.objects, args.batch_size, args.data_dir)
    print(json.dumps(result) if args.json else format_table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
