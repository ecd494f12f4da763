"""Certificates for the hub <-> agent link."""

from __future__ import annotations

import ipaddress
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from hub.federation import tls


def load(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_make_certs_layout_and_contents(tmp_path: Path) -> None:
    paths = tls.make_certs(tmp_path, ["worker-1", "worker-2"], hub_names=["hub.example.com", "10.1.2.3"])
    for p in (
        "ca.crt",
        "ca.key",
        "hub.crt",
        "hub.key",
        "agents/worker-1/worker-1.crt",
        "agents/worker-1/worker-1.key",
        "agents/worker-2/worker-2.crt",
    ):
        assert (tmp_path / p).is_file(), p
    for key in (paths.ca_key, paths.hub_key, tmp_path / "agents" / "worker-1" / "worker-1.key"):
        assert stat.S_IMODE(key.stat().st_mode) == 0o600

    ca = load(paths.ca_crt)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca

    hub = load(paths.hub_crt)
    hub.verify_directly_issued_by(ca)
    sans = hub.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(sans.get_values_for_type(x509.DNSName)) == {"localhost", "hub.example.com"}
    assert set(sans.get_values_for_type(x509.IPAddress)) == {
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("::1"),
        ipaddress.ip_address("10.1.2.3"),
    }
    assert hub.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value == x509.ExtendedKeyUsage(
        [ExtendedKeyUsageOID.SERVER_AUTH]
    )

    agent = load(tmp_path / "agents" / "worker-1" / "worker-1.crt")
    agent.verify_directly_issued_by(ca)
    assert agent.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "worker-1"
    uris = agent.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert uris.get_values_for_type(x509.UniformResourceIdentifier) == ["mkhub://cluster/worker-1"]
    assert agent.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value == x509.ExtendedKeyUsage(
        [ExtendedKeyUsageOID.CLIENT_AUTH]
    )
    assert tls.cluster_name_of((tmp_path / "agents" / "worker-2" / "worker-2.crt").read_bytes()) == "worker-2"


def test_ca_is_reused_when_adding_agents(tmp_path: Path) -> None:
    tls.make_certs(tmp_path, ["worker-1"])
    ca_before = (tmp_path / "ca.crt").read_bytes()
    tls.make_certs(tmp_path, ["worker-3"])
    assert (tmp_path / "ca.crt").read_bytes() == ca_before
    load(tmp_path / "agents" / "worker-3" / "worker-3.crt").verify_directly_issued_by(load(tmp_path / "ca.crt"))
    tls.make_certs(tmp_path, [], new_ca=True)
    assert (tmp_path / "ca.crt").read_bytes() != ca_before


@pytest.mark.parametrize("name", ["", "Worker", "../evil", "a_b", "-x", "x" * 254])
def test_invalid_cluster_names_are_rejected(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError):
        tls.make_certs(tmp_path, [name])


def test_certs_main(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "certs"
    assert (
        tls.certs_main(
            ["--out", str(out), "--agent", "worker-1", "--agent", "worker-2", "--hub-name", "hub.local"]
        )
        == 0
    )
    assert (out / "agents" / "worker-2" / "worker-2.key").is_file()
    assert "worker-1" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        tls.certs_main(["--out", str(out), "--agent", "Bad_Name"])


def test_credentials_build(tmp_path: Path) -> None:
    tls.make_certs(tmp_path, ["worker-1"])
    assert tls.hub_server_credentials(tmp_path) is not None
    assert tls.agent_channel_credentials(tmp_path, "worker-1") is not None


def test_each_agent_directory_holds_only_what_the_agent_needs(tmp_path: Path) -> None:
    tls.make_certs(tmp_path, ["worker-1"])
    own = tmp_path / "agents" / "worker-1"
    assert sorted(p.name for p in own.iterdir()) == ["ca.crt", "worker-1.crt", "worker-1.key"]
    assert (own / "ca.crt").read_bytes() == (tmp_path / "ca.crt").read_bytes()
    tls.agent_channel_credentials(own, "worker-1")  # the agent's --tls-dir
    with pytest.raises(FileNotFoundError, match="--agent worker-2"):
        tls.agent_channel_credentials(own, "worker-2")
