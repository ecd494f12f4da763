"""The control service's client. The channel is made outside (TLS stays out of the class)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import grpc

from hub.service.certs import admin_channel_credentials
from mkhub.v1 import control_pb2 as pb
from mkhub.v1 import control_pb2_grpc as pb_grpc


class CliError(Exception):
    """One line for stderr; the command exits non-zero."""


def open_channel(server: str, *, insecure: bool = False, tls_dir: str | os.PathLike[str] | None = None) -> grpc.Channel:
    if insecure:
        return grpc.insecure_channel(server)
    if tls_dir is None:
        raise CliError("connecting over mutual TLS needs --tls-dir (or MKHUB_TLS_DIR); --insecure for a loopback hub")
    try:
        credentials = admin_channel_credentials(Path(tls_dir))
    except FileNotFoundError as exc:
        raise CliError(str(exc)) from None
    return grpc.secure_channel(server, credentials)


def _error(err: grpc.RpcError, server: str) -> CliError:
    code = err.code() if hasattr(err, "code") else grpc.StatusCode.UNKNOWN
    details = err.details() if hasattr(err, "details") else str(err)
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
    def __init__(self, channel: grpc.Channel, *, server: str = "", timeout: float = 60.0) -> None:
        self._stub = pb_grpc.ControlStub(channel)  # type: ignore[no-untyped-call]
        self._server = server
        self._timeout = timeout

    def _call(self, method: str, request: Any) -> Any:
        try:
            return getattr(self._stub, method)(request, timeout=self._timeout)
        except grpc.RpcError as err:
            raise _error(err, self._server) from None

    def apply(self, text: str, *, namespace: str = "", source: str = "", dry_run: bool = False) -> pb.ApplyResponse:
        return cast(pb.ApplyResponse, self._call("Apply", pb.ApplyRequest(manifests=text, default_namespace=namespace, source=source, dry_run=dry_run)))

    def get(self, kind: str, name: str, namespace: str = "") -> dict[str, Any]:
        out = self._call("Get", pb.GetRequest(kind=kind, namespace=namespace, name=name))
        return dict(json.loads(out.object_json))

    def list(self, kind: str, *, namespace: str = "", all_namespaces: bool = False, selector: str = "") -> tuple[str, bool, list[dict[str, Any]]]:
        out = self._call(
            "List", pb.ListRequest(kind=kind, namespace=namespace, all_namespaces=all_namespaces, label_selector=selector)
        )
        return out.kind, out.namespaced, [json.loads(o) for o in out.objects_json]

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

    def top(self, *, interval: float = 1.0, once: bool = False) -> Iterator[pb.TopSnapshot]:
        try:
            yield from self._stub.Top(pb.TopRequest(interval_ms=int(interval * 1000), once=once))
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.CANCELLED:
                return
            raise _error(err, self._server) from None
