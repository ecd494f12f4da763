"""The dev-cluster's API aggregation: ``apiregistration.k8s.io/v1`` APIServices proxied as
kube-apiserver's aggregator proxies them.

An APIService ``VERSION.GROUP`` with ``spec.service {namespace, name, port}`` sends every
request under ``/apis/GROUP/VERSION/`` to that Service; its group is listed in discovery
(``/apis``, aggregated and legacy) from the APIResourceList the backend serves. The
dev-cluster has no Service network, so the Service resolves as the aggregator's
``ResolveCluster`` does, from the stored Service object:

* ``type: ExternalName``: ``https://EXTERNALNAME:PORT`` (PORT: the APIService's, default 443),
  e.g. ``externalName: 127.0.0.1`` for a hub on this machine;
* ``ClusterIP`` (and NodePort/LoadBalancer) with a ``clusterIP``: ``https://CLUSTERIP:P``
  where P is the Service port equal to the APIService's port.

Always HTTPS, the server certificate checked against ``spec.caBundle`` for the name
``SERVICE.NAMESPACE.svc`` (or not at all with ``spec.insecureSkipTLSVerify``), with the
client certificate of ``--proxy-client-cert-file``/``--proxy-client-key-file`` when given,
and ``X-Remote-User``/``X-Remote-Group`` naming the caller (the dev-cluster's one user).

Availability, as the aggregator's availability controller: every APIService is probed
(``GET /apis/GROUP/VERSION``) when it or its Service changes, every second while it is
unavailable and every ``recheck`` seconds while it is available; its ``Available`` condition
says why not (``ServiceNotFound``, ``ServiceAccessError``, ``FailedDiscoveryCheck``), or
``Passed``. An APIService without ``spec.service``, or naming a group served here, is
``Local`` (always available, served here: a remote one never takes over a built-in group). Only available APIServices are listed in discovery and proxied; the others answer
503 ``ServiceUnavailable``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import logging
import ssl
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import aiohttp
from aiohttp import web

from hub.api.meta import format_time
from hub.store.interface import Conflict, NotFound, Object, Store

from .discovery import ExtraGroup
from .resources import groups

log = logging.getLogger("mkhub.aggregator")

KIND = "APIService"
DEFAULT_PORT = 443
PROBE_TIMEOUT = 5.0
PROXY_TIMEOUT = 60.0
REMOTE_USER = "mkhub-dev-admin"
REMOTE_GROUPS = ("system:masters", "system:authenticated")
_HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "upgrade", "host", "content-length",
                "authorization", "x-remote-user", "x-remote-group"}


@dataclass(frozen=True, slots=True)
class Backend:
    """Where an APIService's requests go, or why they cannot."""

    url: str = ""  # https://host:port; "" when unresolved
    server_name: str = ""
    ca_bundle: str = ""  # PEM
    insecure: bool = False
    reason: str = ""  # why unresolved: ServiceNotFound, ServiceAccessError
    message: str = ""


@dataclass(slots=True)
class _State:
    spec_key: str
    backend: Backend
    available: bool = False
    resources: tuple[Object, ...] = ()
    checked: float = float("-inf")
    group: str = ""
    version: str = ""
    group_priority: int = 0
    version_priority: int = 0
    remote: bool = False


def resolve(apiservice: Object, service: Object | None) -> Backend:
    """The backend of an APIService with ``spec.service``, given the Service it names (None: absent)."""
    spec = apiservice.get("spec") or {}
    ref = spec.get("service") or {}
    namespace, name = str(ref.get("namespace", "")), str(ref.get("name", ""))
    port: int = ref["port"] if isinstance(ref.get("port"), int) else DEFAULT_PORT
    ca = ""
    if spec.get("caBundle"):
        try:
            # Go's base64 for []byte skips line breaks: kustomize writes the value wrapped.
            wrapped = str(spec["caBundle"]).replace("\n", "").replace("\r", "")
            ca = base64.b64decode(wrapped, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return Backend(reason="ServiceAccessError", message="spec.caBundle: not base64-encoded PEM")
    insecure = bool(spec.get("insecureSkipTLSVerify"))

    def at(host: str, port: int) -> Backend:
        return Backend(f"https://{_host(host)}:{port}", f"{name}.{namespace}.svc", ca, insecure)

    if service is None:
        return Backend(reason="ServiceNotFound", message=f'service/{name} in "{namespace}" is not present')
    svc = service.get("spec") or {}
    kind = svc.get("type") or "ClusterIP"
    if kind == "ExternalName":
        host = str(svc.get("externalName") or "")
        if not host:
            return Backend(reason="ServiceAccessError", message=f"service/{name} in \"{namespace}\": no spec.externalName")
        return at(host, port)
    if kind in ("ClusterIP", "NodePort", "LoadBalancer"):
        ip = str(svc.get("clusterIP") or "")
        if not ip or ip == "None":
            return Backend(reason="ServiceAccessError", message=f"service/{name} in \"{namespace}\" has no clusterIP "
                           "(the dev-cluster allocates none: set spec.clusterIP, or use type ExternalName)")
        if not any(isinstance(p, dict) and p.get("port") == port for p in svc.get("ports") or []):
            return Backend(reason="ServiceAccessError", message=f'no service port {port} found for service "{name}"')
        return at(ip, port)
    return Backend(reason="ServiceAccessError", message=f'unsupported service type "{kind}"')


def _host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _condition(status: bool, reason: str, message: str) -> dict[str, str]:
    """The Available condition; its lastTransitionTime is set when written."""
    return {"type": "Available", "status": "True" if status else "False", "lastTransitionTime": "",
            "reason": reason, "message": message}


def _status_body(code: int, reason: str, message: str) -> web.Response:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}
    return web.Response(body=json.dumps(body).encode(), status=code, headers={"Content-Type": "application/json"})


class Aggregator:
    """APIService availability, discovery and proxying for one API server (the dev-cluster)."""

    def __init__(
        self,
        store: Store,
        *,
        client_cert: tuple[Path, Path] | None = None,
        recheck: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.client_cert = client_cert
        if client_cert is not None:  # a bad file is the caller's error at start, not a probe failure later
            try:
                ssl.create_default_context().load_cert_chain(str(client_cert[0]), str(client_cert[1]))
            except OSError as exc:
                raise OSError(f"the proxy client certificate {client_cert[0]} (key {client_cert[1]}): "
                              f"{exc.strerror or exc}") from None
        self.recheck = recheck
        self.clock = clock
        self._states: dict[str, _State] = {}
        self._session: aiohttp.ClientSession | None = None
        self._contexts: dict[tuple[str, bool], ssl.SSLContext] = {}

    # ------------------------------------------------------------------ discovery

    def extra_groups(self) -> Sequence[ExtraGroup]:
        """The groups of available APIServices, by groupPriorityMinimum then versionPriority."""
        by_group: dict[str, list[_State]] = {}
        for st in self._states.values():
            if st.available and st.remote:
                by_group.setdefault(st.group, []).append(st)
        out = []
        for group, states in sorted(by_group.items(), key=lambda g: (-max(s.group_priority for s in g[1]), g[0])):
            states.sort(key=lambda s: (-s.version_priority, s.version))
            out.append(ExtraGroup(group, tuple(s.version for s in states), {s.version: s.resources for s in states}))
        return out

    # ------------------------------------------------------------------ proxy

    async def proxy(self, request: web.BaseRequest, parts: list[str]) -> web.StreamResponse | None:
        """Answer a request under ``/apis/GROUP/VERSION/`` of a remote APIService (None: not one)."""
        st = next((s for s in self._states.values() if s.remote and (s.group, s.version) == (parts[1], parts[2])), None)
        if st is None:
            return None
        if not st.available or not st.backend.url:
            return _status_body(503, "ServiceUnavailable", "the server is currently unable to handle the request")
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_HEADERS}
        headers["X-Remote-User"] = REMOTE_USER
        url = st.backend.url + request.rel_url.path_qs
        try:
            session = self._client()
            async with session.request(
                request.method, url, headers=[*headers.items(), *(("X-Remote-Group", g) for g in REMOTE_GROUPS)],
                data=await request.read(), ssl=self._ssl(st.backend), server_hostname=st.backend.server_name,
                timeout=aiohttp.ClientTimeout(total=PROXY_TIMEOUT), allow_redirects=False,
            ) as upstream:
                body = await upstream.read()
                out = web.Response(body=body, status=upstream.status,
                                   headers={"Content-Type": upstream.headers.get("Content-Type", "application/json")})
                for key in ("Warning", "Cache-Control"):
                    for value in upstream.headers.getall(key, []):
                        out.headers.add(key, value)
                return out
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            log.warning("APIService %s: proxying to %s failed: %s", f"{parts[2]}.{parts[1]}", url, exc)
            st.checked = float("-inf")  # probe it on the next pass, not after ``recheck``
            return _status_body(503, "ServiceUnavailable", f"error trying to reach service: {exc}")

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession()
        return self._session

    def _ssl(self, backend: Backend) -> ssl.SSLContext:
        key = (backend.ca_bundle, backend.insecure)
        ctx = self._contexts.get(key)
        if ctx is None:
            ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
            if backend.insecure:
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            elif backend.ca_bundle:
                ctx.load_verify_locations(cadata=backend.ca_bundle)
            if self.client_cert is not None:
                ctx.load_cert_chain(str(self.client_cert[0]), str(self.client_cert[1]))
            self._contexts[key] = ctx
        return ctx

    # ------------------------------------------------------------------ availability

    async def run(self, stop: asyncio.Event, period: float = 1.0) -> None:
        """Check the APIServices every ``period`` seconds until ``stop``."""
        while not stop.is_set():
            try:
                await self.check()
            except Exception:  # a bad object must not stop aggregation for the others
                log.exception("checking APIServices failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), period)

    async def check(self) -> None:
        """One pass: resolve every APIService, probe those due, write what changed."""
        apiservices, _ = await asyncio.to_thread(self.store.list, KIND, "")
        now = self.clock()
        seen = set()
        for obj in apiservices:
            name = obj["metadata"]["name"]
            seen.add(name)
            spec = obj.get("spec") or {}
            ref = spec.get("service")
            # A group served here stays here (kube-apiserver's own groups have Local APIServices).
            if not ref or spec.get("group") in groups() or (not spec.get("group") and spec.get("version") == "v1"):
                self._states[name] = _State("local", Backend(), True, (), now)
                await self._write(obj, _condition(True, "Local", "Local APIServices are always available"))
                continue
            service = await asyncio.to_thread(self.store.get, "Service", str(ref.get("namespace", "")),
                                              str(ref.get("name", "")))
            backend = resolve(obj, service)
            key = json.dumps([spec, (service or {}).get("spec")], sort_keys=True, default=str)
            st = self._states.get(name) or _State("", backend)
            due = st.spec_key != key or not st.available or now - st.checked >= self.recheck
            if not due:
                continue
            st.spec_key, st.backend, st.checked = key, backend, now
            st.group, st.version = str(spec.get("group", "")), str(spec.get("version", ""))
            st.group_priority = int(spec.get("groupPriorityMinimum") or 0)
            st.version_priority = int(spec.get("versionPriority") or 0)
            st.remote = True
            self._states[name] = st
            if not backend.url:
                st.available = False
                await self._write(obj, _condition(False, backend.reason, backend.message))
                continue
            ok, message, resources = await self._probe(backend, st.group, st.version)
            st.available = ok
            if ok:
                st.resources = resources
            await self._write(obj, _condition(ok, "Passed" if ok else "FailedDiscoveryCheck", message))
        for gone in set(self._states) - seen:
            del self._states[gone]

    async def _probe(self, backend: Backend, group: str, version: str) -> tuple[bool, str, tuple[Object, ...]]:
        url = f"{backend.url}/apis/{group}/{version}"
        try:
            async with self._client().get(
                url, ssl=self._ssl(backend), server_hostname=backend.server_name,
                timeout=aiohttp.ClientTimeout(total=PROBE_TIMEOUT), headers={"Accept": "application/json"},
            ) as resp:
                if resp.status // 100 != 2:
                    return False, f"failing or missing response from {url}: bad status from {url}: {resp.status}", ()
                doc = json.loads(await resp.read())
        except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:
            return False, f"failing or missing response from {url}: {exc}", ()
        resources = doc.get("resources") if isinstance(doc, dict) else None
        if not isinstance(resources, list):
            return False, f"failing or missing response from {url}: not an APIResourceList", ()
        return True, "all checks passed", tuple(r for r in resources if isinstance(r, dict))

    async def _write(self, obj: Object, cond: dict[str, str]) -> None:
        """Set the Available condition when it changed (its transition time when the status did)."""
        status = obj.get("status") or {}
        old = next((c for c in status.get("conditions") or [] if c.get("type") == "Available"), None)
        if old is not None and all(old.get(k) == cond[k] for k in ("status", "reason", "message")):
            return
        cond["lastTransitionTime"] = (
            old["lastTransitionTime"] if old is not None and old.get("status") == cond["status"]
            and old.get("lastTransitionTime") else format_time(float(int(self.clock())))
        )
        others = [c for c in status.get("conditions") or [] if c.get("type") != "Available"]
        with contextlib.suppress(Conflict, NotFound):  # changed or gone meanwhile: the next pass looks again
            await asyncio.to_thread(self.store.update_status, {**obj, "status": {**status, "conditions": [*others, cond]}})
        if old is None or old.get("status") != cond["status"]:
            log.info("APIService %s: Available=%s (%s) %s", obj["metadata"]["name"], cond["status"], cond["reason"],
                     cond["message"])

    async def close(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()
