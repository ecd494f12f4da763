"""Pod logs for the hub's ``LogsRequest`` items (``mkhub logs job/NAME``).

The worker Job has the manager Job's namespace and name, so its pods are the
ones labelled ``batch.kubernetes.io/job-name=NAME`` there. For each pod (and
each container, or the one asked for) the agent reads
``GET /api/v1/namespaces/{ns}/pods/{pod}/log`` from its API server
(``follow``, ``tailLines``, ``container`` as Kubernetes takes them) and sends
the lines back as ``LogChunk`` control items; the last one says ``done``.
Each request runs on its own thread; a ``LogsCancel`` (or the agent stopping)
ends it. Before the agent deletes a finished Job it keeps the lines of its
pods (:meth:`LogReader.archive`), so ``mkhub logs`` still answers once the
workload is finished and its remote objects are gone.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from hub.store.kube.requests import Request
from hub.store.kube.transport import Transport, TransportError
from mkhub.v1 import federation_pb2 as pb

log = logging.getLogger(__name__)

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
ARCHIVE_SIZE = 256  # finished Jobs whose logs are kept
FOLLOW_READ_TIMEOUT = 3600.0


def _pods_path(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods"


class LogReader:
    def __init__(self, transport: Transport, send: Callable[[list[pb.AgentItem]], None]) -> None:
        self.transport = transport
        self.send = send
        self._archive: OrderedDict[str, list[tuple[str, str, list[str]]]] = OrderedDict()
        self._lock = threading.Lock()
        self._cancel: dict[str, threading.Event] = {}
        self._streams: dict[str, list[Any]] = {}

    # ------------------------------------------------------------------ requests

    def on_item(self, item: pb.HubItem) -> None:
        kind = item.WhichOneof("kind")
        if kind == "logs_cancel":
            self.cancel(item.logs_cancel.request_id)
        elif kind == "logs_request":
            req = item.logs_request
            stop = threading.Event()
            with self._lock:
                self._cancel[req.request_id] = stop
            threading.Thread(target=self._serve, args=(req, stop), name=f"mkagent-logs-{req.request_id[:8]}", daemon=True).start()

    def cancel(self, request_id: str) -> None:
        with self._lock:
            stop = self._cancel.pop(request_id, None)
            streams = self._streams.pop(request_id, [])
        if stop is not None:
            stop.set()
        for s in streams:
            s.close()

    def close(self) -> None:
        with self._lock:
            ids = list(self._cancel)
        for rid in ids:
            self.cancel(rid)

    def _chunk(self, rid: str, pod: str = "", container: str = "", lines: list[str] | None = None, *,
               done: bool = False, error: str = "", prefixed: bool = False) -> None:
        self.send([pb.AgentItem(log_chunk=pb.LogChunk(
            request_id=rid, pod=pod, container=container, lines=lines or [], done=done, error=error, prefixed=prefixed,
        ))])

    def _serve(self, req: pb.LogsRequest, stop: threading.Event) -> None:
        rid = req.request_id
        try:
            error = self._answer(req, stop)
        except TransportError as exc:
            error = f"the worker's API server: {exc}"
        except Exception as exc:  # never leave the hub waiting
            log.exception("logs request %s failed", rid)
            error = f"reading the logs failed: {exc}"
        with self._lock:
            self._cancel.pop(rid, None)
            self._streams.pop(rid, None)
        self._chunk(rid, done=True, error=error)

    def _answer(self, req: pb.LogsRequest, stop: threading.Event) -> str:
        ns, job = req.namespace, req.job_name or req.workload_name
        tail = req.tail_lines if req.HasField("tail_lines") else None
        pods = self._pods(ns, job)
        if not pods:
            archived = self._archived(f"{ns}/{job}")
            if archived is None:
                return f'no pods of job "{job}" in namespace "{ns}" on this cluster'
            several = len(archived) > 1
            for pod, container, lines in archived:
                if req.container and container != req.container:
                    continue
                shown = lines if tail is None else (lines[-tail:] if tail else [])
                self._chunk(req.request_id, pod, container, shown, prefixed=several)
            return ""
        targets = [(name, c) for name, containers in pods for c in containers if not req.container or c == req.container]
        if not targets:
            return f'container "{req.container}" is not valid for the pods of job "{job}"'
        several = len(targets) > 1
        if not req.follow:
            for pod, container in targets:
                if stop.is_set():
                    break
                lines = self._read(ns, pod, container, tail)
                self._chunk(req.request_id, pod, container, lines, prefixed=several)
            return ""
        threads = [threading.Thread(target=self._follow, args=(req, ns, pod, container, tail, several, stop), daemon=True)
                   for pod, container in targets]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return ""

    def _pods(self, namespace: str, job: str) -> list[tuple[str, list[str]]]:
        resp = self.transport.send(Request("GET", _pods_path(namespace), (("labelSelector", f"{JOB_NAME_LABEL}={job}"),)))
        if not resp.ok:
            return []
        items = (resp.json() or {}).get("items") or []
        items.sort(key=lambda p: (p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"]))
        return [(p["metadata"]["name"], [str(c.get("name", "")) for c in (p.get("spec") or {}).get("containers") or []])
                for p in items]

    def _query(self, container: str, tail: int | None, follow: bool = False) -> tuple[tuple[str, str], ...]:
        query = [("container", container)]
        if tail is not None:
            query.append(("tailLines", str(tail)))
        if follow:
            query.append(("follow", "true"))
        return tuple(query)

    def _read(self, namespace: str, pod: str, container: str, tail: int | None) -> list[str]:
        resp = self.transport.send(Request("GET", f"{_pods_path(namespace)}/{pod}/log", self._query(container, tail)))
        if not resp.ok:
            message = (resp.json() or {}).get("message") if resp.body[:1] == b"{" else resp.body[:200].decode(errors="replace")
            raise TransportError(f"pod {pod}: {message}")
        return resp.body.decode(errors="replace").splitlines()

    def _follow(self, req: pb.LogsRequest, namespace: str, pod: str, container: str, tail: int | None,
                several: bool, stop: threading.Event) -> None:
        path = f"{_pods_path(namespace)}/{pod}/log"
        stream = self.transport.stream(Request("GET", path, self._query(container, tail, True)), read_timeout=FOLLOW_READ_TIMEOUT)
        with self._lock:
            self._streams.setdefault(req.request_id, []).append(stream)
        try:
            for raw in stream.lines():  # each line as it comes (a followed pod writes slowly)
                if stop.is_set():
                    break
                self._chunk(req.request_id, pod, container, [raw.decode(errors="replace")], prefixed=several)
        except TransportError:
            pass  # cancelled (the stream was closed) or the pod went away
        finally:
            stream.close()

    # ------------------------------------------------------------------ archive

    def archive(self, job_key: str) -> None:
        """Keep the logs of a Job's pods before the agent deletes it (writer thread)."""
        namespace, _, job = job_key.partition("/")
        entries: list[tuple[str, str, list[str]]] = []
        try:
            for pod, containers in self._pods(namespace, job):
                for container in containers:
                    entries.append((pod, container, self._read(namespace, pod, container, None)))
        except TransportError as exc:
            log.debug("could not keep the logs of job %s: %s", job_key, exc)
        if not entries:
            return
        with self._lock:
            self._archive[job_key] = entries
            self._archive.move_to_end(job_key)
            while len(self._archive) > ARCHIVE_SIZE:
                self._archive.popitem(last=False)

    def _archived(self, job_key: str) -> list[tuple[str, str, list[str]]] | None:
        with self._lock:
            return self._archive.get(job_key)

