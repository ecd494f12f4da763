"""TLS material of the control service: ``mkhub certs`` and the CLI's credentials.

The hub's CA (hub/federation/tls.py) signs one more client certificate, for
the administrator: ``DIR/admin.crt`` and ``DIR/admin.key`` with Common Name
``mkhub-admin``. The control service accepts only that name; the federation
refuses it as a cluster name, so neither certificate can stand in for the other.
``DIR/kubeconfig`` carries the admin certificate for kubectl against the hub's
Kubernetes API (``mkhub serve --kube-listen``).
"""

from __future__ import annotations

import argparse
import base64
import os
from collections.abc import Sequence
from pathlib import Path

import grpc
import yaml

from hub.federation import tls

ADMIN_NAME = "mkhub-admin"
KUBECONFIG = "kubeconfig"
DEFAULT_KUBE_SERVER = "https://127.0.0.1:6443"


def admin_paths(tls_dir: str | os.PathLike[str]) -> tuple[Path, Path]:
    d = Path(tls_dir)
    return d / "admin.crt", d / "admin.key"


def make_admin_cert(tls_dir: str | os.PathLike[str], *, days: int = tls.LEAF_DAYS) -> tuple[Path, Path]:
    paths = tls.cert_paths(tls_dir)
    cert_pem, key_pem = tls.make_client_cert(paths.ca_crt.read_bytes(), paths.ca_key.read_bytes(), ADMIN_NAME, days=days)
    crt, key = admin_paths(tls_dir)
    _write(key, key_pem, mode=0o600)
    _write(crt, cert_pem, mode=0o644)
    return crt, key


def _write(path: Path, data: bytes, *, mode: int) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def write_kubeconfig(tls_dir: str | os.PathLike[str], server: str = DEFAULT_KUBE_SERVER) -> Path:
    """``DIR/kubeconfig``: kubectl as the admin against ``mkhub serve --kube-listen``, certificates embedded."""
    paths = tls.cert_paths(tls_dir)
    crt, key = admin_paths(tls_dir)

    def data(path: Path) -> str:
        return base64.b64encode(path.read_bytes()).decode()

    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "mkhub", "cluster": {"server": server, "certificate-authority-data": data(paths.ca_crt)}}],
        "users": [{"name": ADMIN_NAME, "user": {"client-certificate-data": data(crt), "client-key-data": data(key)}}],
        "contexts": [{"name": "mkhub", "context": {"cluster": "mkhub", "user": ADMIN_NAME}}],
        "current-context": "mkhub",
        "preferences": {},
    }
    out = Path(tls_dir) / KUBECONFIG
    _write(out, yaml.safe_dump(config, sort_keys=False).encode(), mode=0o600)
    return out


def admin_channel_credentials(tls_dir: str | os.PathLike[str]) -> grpc.ChannelCredentials:
    crt, key = admin_paths(tls_dir)
    missing = [str(p) for p in (tls.cert_paths(tls_dir).ca_crt, crt, key) if not p.exists()]
    if missing:
        raise FileNotFoundError(f"missing {', '.join(missing)}; create them with: mkhub certs --out {tls_dir}")
    return tls.channel_credentials(tls.cert_paths(tls_dir).ca_crt, crt, key)


def hub_server_credentials(tls_dir: str | os.PathLike[str]) -> grpc.ServerCredentials:
    paths = tls.cert_paths(tls_dir)
    missing = [str(p) for p in (paths.ca_crt, paths.hub_crt, paths.hub_key) if not p.exists()]
    if missing:
        raise FileNotFoundError(f"missing {', '.join(missing)}; create them with: mkhub certs --out {tls_dir}")
    return tls.hub_server_credentials(tls_dir)


def certs_main(argv: Sequence[str] | None = None) -> int:
    """``mkhub certs --out DIR [--agent NAME]... [--hub-name NAME]...``"""
    parser = argparse.ArgumentParser(
        prog="mkhub certs",
        description="Create the CA, the hub's certificate, the admin certificate of the mkhub CLI, "
        "and client certificates for agents (one per MultiKueueCluster).",
    )
    parser.add_argument("--out", required=True, type=Path, help="directory to write into (the hub's and the CLI's --tls-dir)")
    parser.add_argument("--agent", action="append", default=[], metavar="CLUSTER", help="issue an agent certificate (repeatable)")
    parser.add_argument("--hub-name", action="append", default=[], metavar="NAME", help="extra DNS name or IP of the hub (repeatable)")
    parser.add_argument("--new-ca", action="store_true", help="replace an existing CA (invalidates every certificate it signed)")
    parser.add_argument("--days", type=int, default=tls.LEAF_DAYS, help=f"validity of the leaf certificates (default {tls.LEAF_DAYS})")
    parser.add_argument(
        "--kube-server", default=DEFAULT_KUBE_SERVER, metavar="URL",
        help=f"the hub's Kubernetes API in DIR/kubeconfig (mkhub serve --kube-listen; default {DEFAULT_KUBE_SERVER})",
    )
    args = parser.parse_args(argv)
    if ADMIN_NAME in args.agent:
        parser.error(f"{ADMIN_NAME!r} is reserved for the admin certificate")
    try:
        paths = tls.make_certs(args.out, args.agent, args.hub_name, new_ca=args.new_ca, days=args.days)
    except ValueError as err:
        parser.error(str(err))
    crt, key = make_admin_cert(args.out, days=args.days)
    kubeconfig = write_kubeconfig(args.out, args.kube_server)
    print(f"CA:    {paths.ca_crt}")
    print(f"hub:   {paths.hub_crt} {paths.hub_key}")
    print(f"admin: {crt} {key}")
    print(f"kubeconfig: {kubeconfig} (kubectl --kubeconfig {kubeconfig} ..., against {args.kube_server})")
    for name, (agent_crt, _agent_key) in paths.agents.items():
        print(f"agent {name}: {agent_crt.parent}/ (ca.crt, {name}.crt, {name}.key: mkagent --tls-dir {agent_crt.parent})")
    return 0
