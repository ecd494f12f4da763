"""Certificates for the hub <-> agent link: a private CA, the hub's server
certificate, and one client certificate per agent.

An agent's identity is the subject Common Name of its client certificate: the
name of the MultiKueueCluster it serves (also present as the SAN URI
``mkhub://cluster/<name>``). The hub requires a client certificate signed by
its CA and checks that name (see hub/federation/server.py).

Layout written by :func:`make_certs`::

    DIR/ca.crt  DIR/ca.key               the CA (created once, then reused)
    DIR/hub.crt DIR/hub.key              the hub (SANs: localhost, 127.0.0.1, ::1, extra names)
    DIR/agents/<name>/ca.crt, <name>.crt, <name>.key
                                         one directory per agent: all it needs and nothing else
                                         (mkagent --tls-dir DIR/agents/<name>); never the CA's key

Keys are ECDSA P-256, written with mode 0600.
"""

from __future__ import annotations

import argparse
import datetime as dt
import ipaddress
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DEFAULT_HUB_NAMES = ("localhost", "127.0.0.1", "::1")
CA_DAYS = 3650
LEAF_DAYS = 825
CLUSTER_URI_PREFIX = "mkhub://cluster/"
# A Kubernetes object name (DNS-1123 subdomain): also safe as a file name.
_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

PathOrPem = str | os.PathLike[str] | bytes


@dataclass(frozen=True)
class CertPaths:
    dir: Path
    ca_crt: Path
    ca_key: Path
    hub_crt: Path
    hub_key: Path
    agents: dict[str, tuple[Path, Path]]  # name -> (crt, key)


def validate_cluster_name(name: str) -> str:
    if len(name) > 253 or not _NAME_RE.match(name):
        raise ValueError(f"{name!r} is not a valid MultiKueueCluster name (a DNS-1123 subdomain)")
    return name


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _builder(
    subject_cn: str, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey, days: int
) -> x509.CertificateBuilder:
    now = _now()
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject_cn)]))
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        # Tolerate clock skew between the machines that make and check certificates.
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
    )


def make_ca(common_name: str = "mkhub CA", days: int = CA_DAYS) -> tuple[bytes, bytes]:
    """A self-signed CA: (cert PEM, key PEM)."""
    key = _new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (
        _builder(common_name, name, key.public_key(), days)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return _cert_pem(cert), _key_pem(key)


def _issue(
    ca_cert_pem: bytes,
    ca_key_pem: bytes,
    common_name: str,
    sans: list[x509.GeneralName],
    usage: x509.ObjectIdentifier,
    days: int,
) -> tuple[bytes, bytes]:
    ca_cert = x509.load_pem_x509_certificate(ca_cert_pem)
    ca_key = serialization.load_pem_private_key(ca_key_pem, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError("the CA key must be an EC key")
    key = _new_key()
    cert = (
        _builder(common_name, ca_cert.subject, key.public_key(), days)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=True,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return _cert_pem(cert), _key_pem(key)


def _general_name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def make_server_cert(
    ca_cert_pem: bytes, ca_key_pem: bytes, names: Iterable[str] = (), *, days: int = LEAF_DAYS
) -> tuple[bytes, bytes]:
    """The hub's certificate; SANs are localhost, 127.0.0.1, ::1 and ``names``."""
    all_names = list(dict.fromkeys([*DEFAULT_HUB_NAMES, *names]))
    sans = [_general_name(n) for n in all_names]
    return _issue(ca_cert_pem, ca_key_pem, "mkhub-hub", sans, ExtendedKeyUsageOID.SERVER_AUTH, days)


def make_client_cert(
    ca_cert_pem: bytes, ca_key_pem: bytes, cluster_name: str, *, days: int = LEAF_DAYS
) -> tuple[bytes, bytes]:
    """An agent's certificate: CN = cluster name, SAN URI mkhub://cluster/<name>."""
    validate_cluster_name(cluster_name)
    sans: list[x509.GeneralName] = [x509.UniformResourceIdentifier(CLUSTER_URI_PREFIX + cluster_name)]
    return _issue(ca_cert_pem, ca_key_pem, cluster_name, sans, ExtendedKeyUsageOID.CLIENT_AUTH, days)


def _write(path: Path, data: bytes, *, private: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def cert_paths(out_dir: str | os.PathLike[str], agents: Iterable[str] = ()) -> CertPaths:
    d = Path(out_dir)
    return CertPaths(
        dir=d,
        ca_crt=d / "ca.crt",
        ca_key=d / "ca.key",
        hub_crt=d / "hub.crt",
        hub_key=d / "hub.key",
        agents={a: (d / "agents" / a / f"{a}.crt", d / "agents" / a / f"{a}.key") for a in agents},
    )


def make_certs(
    out_dir: str | os.PathLike[str],
    agents: Sequence[str],
    hub_names: Sequence[str] = (),
    *,
    new_ca: bool = False,
    days: int = LEAF_DAYS,
) -> CertPaths:
    """Write the CA (reused when DIR/ca.crt and ca.key exist, unless ``new_ca``),
    a fresh hub certificate and a fresh certificate for every named agent."""
    for name in agents:
        validate_cluster_name(name)
    paths = cert_paths(out_dir, agents)
    if not new_ca and paths.ca_crt.exists() and paths.ca_key.exists():
        ca_cert, ca_key = paths.ca_crt.read_bytes(), paths.ca_key.read_bytes()
    else:
        ca_cert, ca_key = make_ca()
        _write(paths.ca_key, ca_key, private=True)
        _write(paths.ca_crt, ca_cert)
    hub_cert, hub_key = make_server_cert(ca_cert, ca_key, hub_names, days=days)
    _write(paths.hub_key, hub_key, private=True)
    _write(paths.hub_crt, hub_cert)
    for name, (crt, key) in paths.agents.items():
        cert_pem, key_pem = make_client_cert(ca_cert, ca_key, name, days=days)
        crt.parent.mkdir(parents=True, exist_ok=True)
        _write(key, key_pem, private=True)
        _write(crt, cert_pem)
        _write(crt.parent / "ca.crt", ca_cert)
    return paths


def _pem(value: PathOrPem) -> bytes:
    return value if isinstance(value, bytes) else Path(value).read_bytes()


def server_credentials(ca: PathOrPem, cert: PathOrPem, key: PathOrPem) -> grpc.ServerCredentials:
    """Hub credentials: TLS with a client certificate signed by ``ca`` REQUIRED."""
    return grpc.ssl_server_credentials(
        [(_pem(key), _pem(cert))], root_certificates=_pem(ca), require_client_auth=True
    )


def channel_credentials(ca: PathOrPem, cert: PathOrPem, key: PathOrPem) -> grpc.ChannelCredentials:
    """Agent credentials: trust only ``ca``, present the agent's certificate."""
    return grpc.ssl_channel_credentials(
        root_certificates=_pem(ca), private_key=_pem(key), certificate_chain=_pem(cert)
    )


def hub_server_credentials(certs_dir: str | os.PathLike[str]) -> grpc.ServerCredentials:
    p = cert_paths(certs_dir)
    return server_credentials(p.ca_crt, p.hub_crt, p.hub_key)


def agent_files(tls_dir: str | os.PathLike[str], cluster_name: str) -> tuple[Path, Path, Path]:
    """(CA certificate, certificate, key) of an agent: in its own directory (``DIR/agents/<name>``, what
    ``mkagent --tls-dir`` is meant to get), or found there from the whole ``mkhub certs`` directory."""
    d = Path(tls_dir)
    for base in (d, d / "agents" / cluster_name):
        if (base / f"{cluster_name}.crt").exists():
            return base / "ca.crt", base / f"{cluster_name}.crt", base / f"{cluster_name}.key"
    return d / "ca.crt", d / f"{cluster_name}.crt", d / f"{cluster_name}.key"


def agent_channel_credentials(
    certs_dir: str | os.PathLike[str], cluster_name: str
) -> grpc.ChannelCredentials:
    ca, crt, key = agent_files(certs_dir, cluster_name)
    missing = [str(p) for p in (ca, crt, key) if not p.exists()]
    if missing:
        raise FileNotFoundError(
            f"missing {', '.join(missing)}; create them with: mkhub certs --out DIR --agent {cluster_name} "
            f"(then --tls-dir DIR/agents/{cluster_name})"
        )
    return channel_credentials(ca, crt, key)


def cluster_name_of(cert_pem: bytes) -> str:
    """The cluster a client certificate names (its subject Common Name)."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    attrs = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if not attrs:
        raise ValueError("certificate has no Common Name")
    value = attrs[0].value
    return value if isinstance(value, str) else value.decode()


def certs_main(argv: Sequence[str] | None = None) -> int:
    """``mkhub certs --out DIR --agent worker-1 --agent worker-2 [--hub-name hub.example.com]``."""
    parser = argparse.ArgumentParser(
        prog="mkhub certs",
        description="Create the CA, the hub certificate and agent client certificates for the hub <-> agent link.",
    )
    parser.add_argument("--out", required=True, type=Path, help="directory to write into")
    parser.add_argument(
        "--agent",
        action="append",
        default=[],
        metavar="CLUSTER",
        help="issue a client certificate for this MultiKueueCluster (repeatable)",
    )
    parser.add_argument(
        "--hub-name",
        action="append",
        default=[],
        metavar="NAME",
        help="extra DNS name or IP of the hub (repeatable)",
    )
    parser.add_argument(
        "--new-ca",
        action="store_true",
        help="replace an existing CA (invalidates every certificate it signed)",
    )
    parser.add_argument(
        "--days",
        type=int,
        default=LEAF_DAYS,
        help=f"validity of hub and agent certificates (default {LEAF_DAYS})",
    )
    args = parser.parse_args(argv)
    try:
        paths = make_certs(args.out, args.agent, args.hub_name, new_ca=args.new_ca, days=args.days)
    except ValueError as err:
        parser.error(str(err))
    print(f"CA:   {paths.ca_crt}")
    print(f"hub:  {paths.hub_crt} {paths.hub_key}")
    for name, (crt, key) in paths.agents.items():
        print(f"agent {name}: {crt} {key}")
    return 0
