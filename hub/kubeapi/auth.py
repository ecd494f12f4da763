"""Who is calling, and may they: mutual TLS as on the hub's gRPC port.

The client certificate (signed by the hub's CA from ``mkhub certs``) names the
user in its subject Common Name. Only the administrator (``mkhub-admin``, the
CLI's certificate, which the kubeconfig of ``mkhub certs`` carries) may use this
API; any other certificate — an agent's — gets 403 Forbidden on every resource.
Discovery, ``/version`` and ``/healthz`` are open to any authenticated client,
as with the API server's ``system:discovery`` role. Insecure mode (plain HTTP,
loopback only) treats every caller as the administrator.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ANONYMOUS = "system:anonymous"


@dataclass(frozen=True, slots=True)
class Authorizer:
    """Users allowed every verb on every resource; ``None`` allows everyone (insecure mode)."""

    admins: frozenset[str] | None

    def allowed(self, user: str) -> bool:
        return self.admins is None or user in self.admins


def server_ssl_context(ca: Path, cert: Path, key: Path) -> ssl.SSLContext:
    """TLS 1.2+ with a client certificate signed by ``ca`` required."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(ca))
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(str(cert), str(key))
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def user_of(get_extra_info: Callable[[str], Any]) -> str:
    """The Common Name of the verified client certificate of a connection, or ANONYMOUS."""
    cert = get_extra_info("peercert")
    if not isinstance(cert, dict):
        return ANONYMOUS
    for rdn in cert.get("subject", ()):
        for attr, value in rdn:
            if attr == "commonName" and isinstance(value, str):
                return value
    return ANONYMOUS
