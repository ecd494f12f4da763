"""The generated protocol code is built from proto/ and never stale."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import mkhub.v1
from hub.federation import codegen
from mkhub.v1 import federation_pb2 as pb


def installed_root() -> Path:
    """The package root the generated modules are imported from (source tree or site-packages)."""
    return Path(mkhub.v1.__file__).resolve().parents[2]


def test_generated_code_matches_proto() -> None:
    stale = codegen.stale_files(installed_root())
    assert not stale, f"generated code is stale: {stale}; run: python -m hub.federation.codegen"


def test_generated_descriptor_matches_proto(tmp_path: Path) -> None:
    # Independent of any text layout: the schema compiled into the module is the .proto's.
    codegen.generate(tmp_path)
    text = (tmp_path / "mkhub" / "v1" / "federation_pb2.py").read_text()
    blob_line = next(line for line in text.splitlines() if "AddSerializedFile(" in line)
    blob = ast.literal_eval(blob_line.split("AddSerializedFile(", 1)[1].rsplit(")", 1)[0])
    assert pb.DESCRIPTOR.serialized_pb == blob


def test_staleness_is_detected(tmp_path: Path) -> None:
    out = tmp_path / "out"
    codegen.generate(out)
    assert codegen.stale_files(out) == []
    # A hand edit of generated code...
    pyi = out / "mkhub" / "v1" / "federation_pb2.pyi"
    pyi.write_text(pyi.read_text() + "\n# edited\n")
    assert codegen.stale_files(out) == [pyi]
    # ...and a .proto changed after generation are both stale.
    codegen.generate(out)
    protos = tmp_path / "proto"
    shutil.copytree(codegen.PROTO_ROOT, protos)
    proto = protos / "mkhub" / "v1" / "federation.proto"
    proto.write_text(proto.read_text().replace("message Ping {}", "message Ping { int64 nonce = 1; }"))
    stale = {p.name for p in codegen.stale_files(out, protos)}
    assert stale == {"federation_pb2.py", "federation_pb2.pyi"}  # the service is unchanged


def test_generator_version_lines_are_ignored(tmp_path: Path) -> None:
    codegen.generate(tmp_path)
    grpc_file = tmp_path / "mkhub" / "v1" / "federation_pb2_grpc.py"
    text = grpc_file.read_text()
    version_line = next(line for line in text.splitlines() if line.startswith("GRPC_GENERATED_VERSION"))
    grpc_file.write_text(text.replace(version_line, "GRPC_GENERATED_VERSION = '0.0.1'"))
    assert codegen.stale_files(tmp_path) == []
    assert codegen.stale_files(tmp_path, ignore_generator_version=False) == [grpc_file]


def test_generated_files_are_not_tracked() -> None:
    gitignore = (Path(codegen.REPO_ROOT) / ".gitignore").read_text()
    for suffix in codegen.GENERATED_SUFFIXES:
        assert f"/mkhub/**/*{suffix}" in gitignore


def test_codegen_check_cli(tmp_path: Path) -> None:
    assert codegen.main(["--check", "--out", str(tmp_path)]) == 1
    assert codegen.main(["--out", str(tmp_path)]) == 0
    assert codegen.main(["--check", "--out", str(tmp_path)]) == 0
