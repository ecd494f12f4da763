"""The wheel's metadata matches the generated protocol code: the dependency floors are the versions the
code was generated for (older ones die with VersionError at import), and the generator is pinned."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

import mkhub.v1

ROOT = Path(__file__).resolve().parents[1]
GENERATED = Path(mkhub.v1.__file__).resolve().parent


def _floor(requirements: list[str], name: str) -> Version:
    for text in requirements:
        req = Requirement(text)
        if req.name.lower() == name and not req.marker:
            floors = [Version(s.version) for s in req.specifier if s.operator in (">=", "==")]
            assert floors, f"{text}: no floor"
            return max(floors)
    raise AssertionError(f"{name} is not a dependency")


def generated_versions() -> tuple[Version, Version]:
    """(grpcio, protobuf) versions the generated modules require."""
    grpc_versions = {re.search(r"GRPC_GENERATED_VERSION = '([^']+)'", p.read_text()).group(1)  # type: ignore[union-attr]
                     for p in GENERATED.glob("*_pb2_grpc.py")}
    proto_versions = set()
    for p in GENERATED.glob("*_pb2.py"):
        m = re.search(r"ValidateProtobufRuntimeVersion\(\s*_runtime_version\.Domain\.PUBLIC,\s*(\d+),\s*(\d+),\s*(\d+),", p.read_text())
        assert m, f"{p}: no runtime version check"
        proto_versions.add(".".join(m.groups()))
    assert len(grpc_versions) == 1 and len(proto_versions) == 1, (grpc_versions, proto_versions)
    return Version(grpc_versions.pop()), Version(proto_versions.pop())


def test_dependency_floors_match_the_generated_code() -> None:
    grpc_version, protobuf_version = generated_versions()
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for requirements in (pyproject["project"]["dependencies"], metadata.requires("mkhub") or []):
        assert _floor(requirements, "grpcio") == grpc_version
        assert _floor(requirements, "grpcio-health-checking") == grpc_version
        assert _floor(requirements, "protobuf") == protobuf_version


def test_the_generator_is_pinned_to_the_version_the_code_came_from() -> None:
    grpc_version, _ = generated_versions()
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pins = [Requirement(r) for r in pyproject["build-system"]["requires"] if Requirement(r).name == "grpcio-tools"]
    assert len(pins) == 1 and str(pins[0].specifier) == f"=={grpc_version}"
    assert metadata.version("grpcio-tools") == str(grpc_version)


def test_license_is_an_spdx_expression() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["license"] == "Apache-2.0"
