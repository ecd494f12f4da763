"""``mkhub serve --kube-listen ADDR``: the hub's own Kubernetes API (hub/kubeapi) over its store.

Writes go through :meth:`hub.service.apply.Applier.admit`, the checks of ``mkhub
apply``; they land in the same store the hub reconciler watches, so the engine
reacts to them as to any other write. Mutual TLS with the certificates of
``mkhub certs`` (the hub's certificate, client certificates signed by its CA):
the admin certificate may do everything, any other (an agent's) gets 403.
``--insecure`` serves plain HTTP, on a loopback address only.

``mkhub serve --visibility-listen ADDR`` serves Kueue's visibility API alone
(:class:`hub.kubeapi.visibility.VisibilityServer`), over HTTPS with the hub's
certificate, for an ``APIService`` to front as Kueue's visibility server is: the
API server authorizes the user (RBAC on ``visibility.kueue.x-k8s.io``) before it
proxies; ``--visibility-client-ca`` makes this port take only callers whose
client certificate that CA signed (the API server's ``--proxy-client-cert-file``).
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import ssl
from collections.abc import Callable
from pathlib import Path

from hub.federation import tls
from hub.kubeapi import Authorizer, KubeAPI, server_ssl_context
from hub.kubeapi.visibility import Pending, VisibilityServer
from hub.store.interface import Store

from .apply import Applier
from .certs import ADMIN_NAME

log = logging.getLogger("mkhub.kubeapi")


def split_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:6443`` for IPv6) -> (host, port); raises ValueError."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--kube-listen {address!r}: expected HOST:PORT")
    return host.strip("[]") or "0.0.0.0", int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def build_kube_api(
    store: Store, *, insecure: bool, partial_admission: bool = True, version: str = "dev",
    clock: Callable[[], float] | None = None,
) -> KubeAPI:
    applier = Applier(store, partial_admission=partial_admission) if clock is None else Applier(
        store, partial_admission=partial_admission, clock=clock
    )
    return KubeAPI(
        store, applier.admit, authorizer=Authorizer(None if insecure else frozenset({ADMIN_NAME})), version=version
    )


async def start_kube_api(
    api: KubeAPI, address: str, *, tls_dir: Path | None, insecure: bool
) -> int:
    """Listen on ``address``; returns the bound port."""
    host, port = split_address(address)
    if insecure:
        if not is_loopback(host):
            raise ValueError(f"--kube-listen {address}: --insecure serves only a loopback address (127.0.0.1, ::1)")
        context = None
    else:
        paths = tls.cert_paths(tls_dir or Path("."))
        missing = [str(p) for p in (paths.ca_crt, paths.hub_crt, paths.hub_key) if not p.exists()]
        if missing:
            raise FileNotFoundError(f"missing {', '.join(missing)}; create them with: mkhub certs --out {tls_dir}")
        context = server_ssl_context(paths.ca_crt, paths.hub_crt, paths.hub_key)
    bound = await api.start(host, port, context)
    log.info("Kubernetes API listening on %s:%d (%s)", host, bound, "insecure" if insecure else "mTLS")
    return bound


async def stop_kube_api(api: KubeAPI | None) -> None:
    if api is not None:
        with contextlib.suppress(Exception):
            await api.stop()


async def start_visibility(pending: Pending, address: str, tls_dir: Path | None, client_ca: Path | None) -> VisibilityServer:
    """Serve the visibility API on ``address`` (HTTPS always: an aggregator speaks TLS only)."""
    try:
        host, port = split_address(address)
    except ValueError:
        raise ValueError(f"--visibility-listen {address!r}: expected HOST:PORT") from None
    if tls_dir is None:
        raise ValueError("--visibility-listen needs --webhook-tls-dir DIR or --tls-dir DIR (the hub's certificate "
                         "from mkhub certs)")
    paths = tls.cert_paths(tls_dir)
    missing = [str(p) for p in (paths.hub_crt, paths.hub_key, *((client_ca,) if client_ca else ())) if not p.exists()]
    if missing:
        raise FileNotFoundError(f"--visibility-listen: missing {', '.join(missing)}")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(client_ca) if client_ca else None)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(paths.hub_crt), str(paths.hub_key))
    context.verify_mode = ssl.CERT_REQUIRED if client_ca else ssl.CERT_NONE
    server = VisibilityServer(pending, Authorizer(None))
    bound = await server.start(host, port, context)
    log.info("visibility API listening on https://%s:%d/apis/visibility.kueue.x-k8s.io (%s)", host, bound,
             f"client certificates of {client_ca}" if client_ca else "no client certificate asked")
    return server
