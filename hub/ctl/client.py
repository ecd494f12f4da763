"""The control service's client. The channel is made outside (TLS stays out of the class)."""

from __future__ import annotations

import builtins
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import grpc

from mkhub.v1 import control_pb2 as pb
from mkhub.v1 import control_pb2_grpc as pb_grpc

from .errors import CliError

__all__ = ["CliError", "ControlClient", "open_channel"]


# The hub's replies have no fixed bound (a List of every object, each up to 1.5 MiB):
# receive whatever it sends rather than fail on gRPC's 4 MiB default.
CHANNEL_OPTIONS = [("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)]


def open_channel(server: str, *, insecure: bool = False, tls_dir: str | os.PathLike[str] | None = None) -> grpc.Channel:
    if insecure:
        return grpc.insecure_channel(server, options=CHANNEL_OPTIONS)
    if tls_dir is None:
        raise CliError("connecting over mutual TLS needs --tls-dir (or MKHUB_TLS_DIR); --insecure for a loopback hub")
    from hub.service.certs import admin_channel_credentials  # cryptography: only for TLS

    try:
        credentials = admin_channel_credentials(Path(tls_dir))
    except FileNotFoundError as exc:
        raise CliError(str(exc)) from None
    return grpc.secure_channel(server, credentials, options=CHANNEL_OPTIONS)


# What gRPC says when the two ends disagree on TLS (a plaintext client at a TLS hub, and the reverse).
_PLAINTEXT_AT_TLS = ("Socket closed", "Connection reset by peer")
_TLS_AT_PLAINTEXT = ("WRONG_VERSION_NUMBER", "Ssl handshake failed", "SSL_ERROR_SSL", "handshake")


def _error(err: grpc.RpcError, server: str, insecure: bool | None = None) -> CliError:
    code = err.code() if hasattr(err, "code") else grpc.StatusCode.UNKNOWN
    details = err.details() if hasattr(err, "details") else str(err)
    if code == grpc.StatusCode.UNAVAILABLE and insecure is True and any(s in (details or "") for s in _PLAINTEXT_AT_TLS):
        return CliError(
            f"the hub at {server} closed the plaintext connection: it expects TLS; "
            "use --tls-dir DIR (or MKHUB_TLS_DIR) with the certificates from `mkhub certs`, not --insecure"
        )
    if code == grpc.StatusCode.UNAVAILABLE and insecure is False and any(s in (details or "") for s in _TLS_AT_PLAINTEXT):
        return CliError(
            f"the TLS handshake with the hub at {server} failed: the hub serves plaintext (started with --insecure) "
            "or presents a certificate from another CA; use --insecure for a plaintext hub"
        )
    if code == grpc.StatusCode.UNAVAILABLE and "hub" not in (details or ""):
        return CliError(f"cannot reach the hub at {server}: {details}")
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return CliError(f"the hub at {server} did not answer in time")
    names = {
        grpc.StatusCode.NOT_FOUND: "NotFound",
        grpc.StatusCode.INVALID_ARGUMENT: "BadRequest",
        grpc.StatusCode.PERMISSION_DENIED: "Forbidden",
        grpc.StatusCode.UNAUTHENTICATED: "Unauthorized",
        grpc.StatusCode.UNAVAILABLE: "ServiceUnavailable",
    }
    return CliError(f"Error from server ({names.get(code, code.name)}): {details}")


class ControlClient:
    def __init__(self, channel: grpc.Channel, *, server: str = "", timeout: float = 60.0, insecure: bool | None = None) -> None:
        self._stub = pb_grpc.ControlStub(channel)  # type: ignore[no-untyped-call]
        self._server = server
        self._timeout = timeout
        self._insecure = insecure  # how we connected, to explain a TLS mismatch (None: unknown)

    def _call(self, method: str, request: Any) -> Any:
        try:
            return getattr(self._stub, method)(request, timeout=self._timeout)
        except grpc.RpcError as err:
            raise _error(err, self._server, self._insecure) from None

    def apply(
        self, text: str, *, namespace: str = "", source: str = "", dry_run: bool = False, create: bool = False,
        field_validation: str = "Strict",
    ) -> pb.ApplyResponse:
        request = pb.ApplyRequest(manifests=text, default_namespace=namespace, source=source, dry_run=dry_run, create=create,
                                  field_validation=field_validation)
        return cast(pb.ApplyResponse, self._call("Apply", request))

    def get(self, kind: str, name: str, namespace: str = "") -> dict[str, Any]:
        out = self._call("Get", pb.GetRequest(kind=kind, namespace=namespace, name=name))
        return dict(json.loads(out.object_json))

    def list(self, kind: str, *, namespace: str = "", all_namespaces: bool = False, selector: str = "") -> tuple[str, bool, list[dict[str, Any]]]:
        kind, namespaced, objects, _ = self.list_with_version(kind, namespace=namespace, all_namespaces=all_namespaces, selector=selector)
        return kind, namespaced, objects

    def list_with_version(
        self, kind: str, *, namespace: str = "", all_namespaces: bool = False, selector: str = ""
    ) -> tuple[str, bool, builtins.list[dict[str, Any]], int]:
        """(resolved kind, namespaced, objects, the store's resourceVersion to watch from)."""
        out = self._call(
            "List", pb.ListRequest(kind=kind, namespace=namespace, all_namespaces=all_namespaces, label_selector=selector)
        )
        return out.kind, out.namespaced, [json.loads(o) for o in out.objects_json], int(out.resource_version)

    def watch(
        self,
        kind: str,
        *,
        namespace: str = "",
        all_namespaces: bool = False,
        selector: str = "",
        resource_version: int = 0,
        name: str = "",
        timeout: float | None = None,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """(ADDED|MODIFIED|DELETED, object) for every change after ``resource_version``, until interrupted
        or ``timeout`` seconds have passed (then it just ends)."""
        request = pb.WatchRequest(
            kind=kind, namespace=namespace, all_namespaces=all_namespaces, label_selector=selector,
            resource_version=resource_version, name=name,
        )
        stream = self._stub.Watch(request, timeout=timeout)
        try:
            for event in stream:
                yield event.type, json.loads(event.object_json)
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.CANCELLED or (timeout is not None and err.code() == grpc.StatusCode.DEADLINE_EXCEEDED):
                return
            raise _error(err, self._server, self._insecure) from None
        finally:
            stream.cancel()

    def delete(self, kind: str = "", name: str = "", namespace: str = "", *, manifests: str = "", source: str = "") -> pb.DeleteResponse:
        request = pb.DeleteRequest(kind=kind, namespace=namespace, name=name, manifests=manifests, source=source)
        return cast(pb.DeleteResponse, self._call("Delete", request))

    def describe(self, kind: str, name: str, namespace: str = "") -> pb.DescribeResponse:
        return cast(pb.DescribeResponse, self._call("Describe", pb.DescribeRequest(kind=kind, namespace=namespace, name=name)))

    def pending_workloads(
        self, *, cluster_queue: str = "", namespace: str = "", local_queue: str = "", all_queues: bool = False,
        limit: int = 0, offset: int = 0,
    ) -> dict[str, Any]:
        """Kueue's PendingWorkloadsSummary (visibility API) of a ClusterQueue, a LocalQueue or every queue."""
        reply = self._call("PendingWorkloads", pb.PendingWorkloadsRequest(
            cluster_queue=cluster_queue, namespace=namespace, local_queue=local_queue, all=all_queues, limit=limit,
            offset=offset,
        ))
        summary: dict[str, Any] = json.loads(reply.summary_json)
        return summary

    def logs(self, kind: str, name: str, *, namespace: str = "", container: str = "", follow: bool = False,
             tail: int | None = None) -> Iterator[pb.LogLines]:
        """The pod log lines of a Job run on a worker, relayed by its agent (until done, or interrupted)."""
        request = pb.JobLogsRequest(kind=kind, name=name, namespace=namespace, container=container, follow=follow)
        if tail is not None:
            request.tail_lines = tail
        try:
            yield from self._stub.Logs(request, timeout=None if follow else self._timeout)
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.CANCELLED:
                return
            raise _error(err, self._server, self._insecure) from None

    def top(self, *, interval: float = 1.0, once: bool = False) -> Iterator[pb.TopSnapshot]:
        try:
            yield from self._stub.Top(pb.TopRequest(interval_ms=int(interval * 1000), once=once))
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.CANCELLED:
                return
            raise _error(err, self._server, self._insecure) from None
