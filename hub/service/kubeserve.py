"""``mkhub serve --kube-listen ADDR``: the hub's own Kubernetes API (hub/kubeapi) over its store.

Writes go through :meth:`hub.service.apply.Applier.admit`, the checks of ``mkhub
apply``; they land in the same store the hub reconciler watches, so the engine
reacts to them as to any other write. Mutual TLS with the certificates of
``mkhub certs`` (the hub's certificate, client certificates signed by its CA):
the admin certificate may do everything, any other (an agent's) gets 403.
``--insecure`` serves plain HTTP, on a loopback address only.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
from collections.abc import Callable
from pathlib import Path

from hub.federation import tls
from hub.kubeapi import Authorizer, KubeAPI, server_ssl_context
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
