"""mkhub's Python client: submit workloads to a hub and follow them from Python.

The hub's control service (gRPC, ``proto/mkhub/v1/control.proto``) is what ``mkhub apply/get/
delete/describe`` talk to; this module is the same service for programs. Objects go in and come
out as plain dicts shaped as their Kubernetes manifests (Kueue's kinds as
``kueue.x-k8s.io/v1beta2``), so a manifest written for ``kubectl`` or ``mkhub apply`` works
unchanged::

    from hub.client import Hub

    with Hub.connect("127.0.0.1:7443", tls_dir="certs/") as hub:   # or insecure=True on loopback
        job = hub.create({"apiVersion": "batch/v1", "kind": "Job",
                          "metadata": {"generateName": "sample-job-",
                                       "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
                          "spec": {...}})
        wl = hub.wait_for_workload("Job", job["metadata"]["name"], condition="Admitted")
        hub.wait("Job", job["metadata"]["name"], until=lambda j: j["status"].get("succeeded") == 3)

Refusals are :class:`ApplyError` (one line per refused object naming the object, the field and the
reason, as the hub wrote it; nothing of a refused object is stored), a missing object
:class:`NotFoundError`, an unreachable hub or other failure :class:`HubError`; waits that run out
raise :class:`TimeoutError`. A hub on Kubernetes is driven with the official ``kubernetes`` client
instead, as Kueue's own Python examples do (README, "Python").
"""

from __future__ import annotations

import builtins
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import grpc
import yaml

from hub.ctl.client import ControlClient, open_channel
from hub.ctl.errors import CliError

__all__ = ["Applied", "ApplyError", "Hub", "HubError", "NotFoundError"]

Object = dict[str, Any]
DEFAULT_SERVER = "127.0.0.1:7443"


class HubError(Exception):
    """The hub could not be reached or refused the request (one line, as ``mkhub`` prints it)."""


class NotFoundError(HubError):
    """The object does not exist."""


@dataclass(frozen=True, slots=True)
class Applied:
    """One object of an apply: its kind, namespace and name, and ``created``/``configured``/``unchanged``."""

    kind: str
    namespace: str
    name: str
    action: str


class ApplyError(HubError):
    """Some objects were refused: ``errors`` has one line each; ``applied`` the others, which were stored."""

    def __init__(self, errors: Sequence[str], applied: Sequence[Applied]) -> None:
        super().__init__("\n".join(errors))
        self.errors = list(errors)
        self.applied = list(applied)


def _hub_error(err: CliError) -> HubError:
    text = str(err)
    return NotFoundError(text) if "(NotFound)" in text else HubError(text)


class Hub:
    """A connection to one hub. Thread-safe as gRPC channels are; close it (or use ``with``)."""

    def __init__(self, channel: grpc.Channel, *, server: str = "", timeout: float = 60.0) -> None:
        self._channel = channel
        self._control = ControlClient(channel, server=server, timeout=timeout)

    @classmethod
    def connect(
        cls,
        server: str | None = None,
        *,
        tls_dir: str | os.PathLike[str] | None = None,
        insecure: bool | None = None,
        timeout: float = 60.0,
    ) -> Hub:
        """Connect as ``mkhub`` does: ``server`` (default ``$MKHUB_SERVER`` or 127.0.0.1:7443) over mutual TLS
        with the admin certificate from ``mkhub certs`` in ``tls_dir`` (default ``$MKHUB_TLS_DIR``), or
        plaintext with ``insecure`` (default ``$MKHUB_INSECURE``) for a hub on loopback."""
        server = server or os.environ.get("MKHUB_SERVER") or DEFAULT_SERVER
        if tls_dir is None:
            tls_dir = os.environ.get("MKHUB_TLS_DIR") or None
        if insecure is None:
            insecure = os.environ.get("MKHUB_INSECURE", "").lower() in ("1", "true", "yes")
        try:
            channel = open_channel(server, insecure=insecure, tls_dir=tls_dir)
        except CliError as err:
            raise HubError(str(err)) from None
        return cls(channel, server=server, timeout=timeout)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> Hub:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # ------------------------------------------------------------------ writes

    def apply(self, objects: Mapping[str, Any] | Sequence[Mapping[str, Any]] | str, *, namespace: str = "",
              dry_run: bool = False, field_validation: str = "Strict") -> list[Applied]:
        """Create or update objects (a manifest dict, a list of them, or YAML/JSON text with ``---``
        documents), each on its own as ``kubectl apply`` does. ``namespace`` is for objects that name
        none (default ``default``). Raises :class:`ApplyError` if any was refused. ``field_validation``:
        unknown fields refused (Strict), dropped with a warning (Warn) or dropped (Ignore)."""
        return self._apply(objects, namespace=namespace, dry_run=dry_run, create=False, field_validation=field_validation)

    def create(self, obj: Mapping[str, Any], *, namespace: str = "") -> Object:
        """Create one object (``metadata.generateName`` allowed; an existing name is an error) and
        return it as stored, with the name the hub gave it."""
        (applied,) = self._apply(obj, namespace=namespace, dry_run=False, create=True)
        return self.get(applied.kind, applied.name, applied.namespace)

    def _apply(self, objects: Mapping[str, Any] | Sequence[Mapping[str, Any]] | str, *, namespace: str,
               dry_run: bool, create: bool, field_validation: str = "Strict") -> list[Applied]:
        if isinstance(objects, str):
            text = objects
        elif isinstance(objects, Mapping):
            text = json.dumps(dict(objects))
        else:
            text = yaml.safe_dump_all([dict(o) for o in objects])
        try:
            reply = self._control.apply(text, namespace=namespace, source="hub.client", dry_run=dry_run, create=create,
                                         field_validation=field_validation)
        except CliError as err:
            raise _hub_error(err) from None
        applied = [Applied(r.object.kind, r.object.namespace, r.object.name, r.action) for r in reply.results if not r.error]
        errors = [r.error for r in reply.results if r.error]
        if errors or reply.rejected:
            raise ApplyError(errors or ["the hub refused the objects"], applied)
        return applied

    def delete(self, kind: str, name: str, namespace: str = "") -> None:
        """Delete one object (a Job's Workload and pods go with it, as on Kubernetes)."""
        try:
            reply = self._control.delete(kind, name, namespace)
        except CliError as err:
            raise _hub_error(err) from None
        errors = [r.error for r in reply.results if r.error]
        if errors:
            raise (NotFoundError if any("not found" in e for e in errors) else HubError)("\n".join(errors))

    # ------------------------------------------------------------------ reads

    def get(self, kind: str, name: str, namespace: str = "") -> Object:
        """One object (``kind``: kind, plural or short name, as ``mkhub get`` takes)."""
        try:
            return self._control.get(kind, name, namespace)
        except CliError as err:
            raise _hub_error(err) from None

    def list(self, kind: str, *, namespace: str | None = None, selector: str = "") -> list[Object]:
        """Objects of a kind: in ``namespace``, or in every namespace when it is None."""
        try:
            _, _, objects = self._control.list(kind, namespace=namespace or "", all_namespaces=namespace is None,
                                               selector=selector)
        except CliError as err:
            raise _hub_error(err) from None
        return objects

    def watch(self, kind: str, *, namespace: str | None = None, name: str = "", selector: str = "",
              timeout: float | None = None) -> Iterator[tuple[str, Object]]:
        """The objects of a kind as they are now (``ADDED``), then each change (``ADDED``, ``MODIFIED``,
        ``DELETED``) until the caller stops iterating or ``timeout`` seconds pass (then it just ends)."""
        try:
            _, _, objects, version = self._control.list_with_version(
                kind, namespace=namespace or "", all_namespaces=namespace is None, selector=selector)
            for obj in objects:
                if not name or obj.get("metadata", {}).get("name") == name:
                    yield "ADDED", obj
            yield from self._control.watch(kind, namespace=namespace or "", all_namespaces=namespace is None,
                                           selector=selector, resource_version=version, name=name, timeout=timeout)
        except CliError as err:
            raise _hub_error(err) from None

    def wait(self, kind: str, name: str, namespace: str = "default", *, until: Callable[[Object], bool],
             timeout: float = 300.0) -> Object:
        """Follow one object until ``until(object)`` is true; returns it. :class:`TimeoutError` after
        ``timeout`` seconds, :class:`NotFoundError` if it is deleted meanwhile."""
        deadline = time.monotonic() + timeout
        seen = False
        for event, obj in self.watch(kind, namespace=namespace, name=name, timeout=timeout):
            if event == "DELETED":
                raise NotFoundError(f'{kind} "{namespace}/{name}" was deleted')
            seen = True
            if until(obj):
                return obj
            if time.monotonic() >= deadline:
                break
        what = f'{kind} "{namespace}/{name}"'
        raise TimeoutError(f"{what} did not reach the awaited state in {timeout:g}s" if seen else f"{what} not found")

    def workload_of(self, kind: str, name: str, namespace: str = "default") -> Object | None:
        """The Workload the hub made for an object (owned by it), or None while there is none."""
        for wl in self.list("Workload", namespace=namespace):
            for ref in wl.get("metadata", {}).get("ownerReferences") or []:
                if ref.get("kind") == kind and ref.get("name") == name:
                    return wl
        return None

    def wait_for_workload(self, kind: str, name: str, namespace: str = "default", *, condition: str = "Admitted",
                          timeout: float = 300.0) -> Object:
        """Wait until the object's Workload has ``condition`` (``QuotaReserved``, ``Admitted``, ``Finished``,
        ...) True; returns the Workload."""
        deadline = time.monotonic() + timeout
        while (wl := self.workload_of(kind, name, namespace)) is None:
            if time.monotonic() >= deadline:
                raise TimeoutError(f'no Workload for {kind} "{namespace}/{name}" in {timeout:g}s')
            time.sleep(0.1)
        wl_name = wl["metadata"]["name"]
        return self.wait("Workload", wl_name, namespace, until=lambda w: has_condition(w, condition),
                         timeout=max(0.0, deadline - time.monotonic()))

    def pending_workloads(self, *, cluster_queue: str = "", local_queue: str = "", namespace: str = "",
                          limit: int = 0, offset: int = 0) -> builtins.list[Object]:
        """Kueue's visibility API: the pending workloads of a ClusterQueue (or a LocalQueue), in queue order."""
        try:
            summary = self._control.pending_workloads(cluster_queue=cluster_queue, namespace=namespace,
                                                      local_queue=local_queue, limit=limit, offset=offset)
        except CliError as err:
            raise _hub_error(err) from None
        items: list[Object] = summary.get("items") or []
        return items


def has_condition(obj: Mapping[str, Any], type_: str, status: str = "True") -> bool:
    """Whether ``obj.status.conditions`` has ``type_`` with ``status``."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == type_ and c.get("status") == status for c in conditions)
