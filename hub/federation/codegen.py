"""Generate the Python code of proto/ with grpc_tools.protoc.

Generated modules are never committed: ``setup.py`` runs this at build time
(``pip install -e .`` writes them next to the source in ``mkhub/``, ``pip
install .`` writes them into the wheel), and developers who edit a .proto run
``python -m hub.federation.codegen`` to regenerate in place (``--check``
fails instead when the checked-in tree is stale).

This module imports nothing from the project and only the standard library at
import time: setup.py loads it by file path inside an isolated build
environment where the ``hub`` package is not importable.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PROTO_ROOT = REPO_ROOT / "proto"
# Suffixes protoc writes for one .proto file.
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")


def proto_files(proto_root: Path = PROTO_ROOT) -> list[Path]:
    """Every .proto under proto_root, relative to it, sorted."""
    return sorted(p.relative_to(proto_root) for p in proto_root.rglob("*.proto"))


def expected_outputs(proto_root: Path = PROTO_ROOT) -> list[Path]:
    """The files generate() writes, relative to its output directory."""
    out: list[Path] = []
    for proto in proto_files(proto_root):
        stem = proto.with_suffix("")
        out.extend(stem.parent / (stem.name + suffix) for suffix in GENERATED_SUFFIXES)
    return out


def _run_protoc(proto_root: Path, out_dir: Path) -> None:
    # Imported here so that merely loading this module needs no grpc_tools.
    from importlib import resources

    from grpc_tools import protoc

    proto_root = proto_root.resolve()
    well_known = resources.files("grpc_tools") / "_proto"
    # Absolute paths under --proto_path: unambiguous whatever the working directory.
    files = [str(proto_root / p) for p in proto_files(proto_root)]
    if not files:
        raise RuntimeError(f"no .proto files under {proto_root}")
    args = [
        "grpc_tools.protoc",
        f"--proto_path={proto_root}",
        f"--proto_path={well_known}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        *files,
    ]
    rc = protoc.main(args)
    if rc != 0:
        raise RuntimeError(f"grpc_tools.protoc failed with exit code {rc}: {' '.join(args)}")


def generate(out_dir: Path, proto_root: Path = PROTO_ROOT) -> list[Path]:
    """Generate into out_dir (a package root such as the repo root or build/lib).

    Files are written atomically and only when their content changed, so
    concurrent readers never see a half-written module and unchanged files keep
    their mtime. Returns the paths written (changed).
    """
    out_dir = Path(out_dir)
    changed: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="mkhub-codegen-") as tmp:
        _run_protoc(proto_root, Path(tmp))
        for rel in expected_outputs(proto_root):
            src = Path(tmp) / rel
            dst = out_dir / rel
            if dst.exists() and filecmp.cmp(src, dst, shallow=False):
                continue
            dst.parent.mkdir(parents=True, exist_ok=True)
            staging = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
            staging.write_bytes(src.read_bytes())
            os.replace(staging, dst)
            changed.append(dst)
    return changed


# Lines that record which protoc / grpcio-tools produced a file. An isolated
# build (pip install -e .) may use a newer grpcio-tools than the developer's
# virtualenv; that is not staleness with respect to the .proto.
_VERSION_LINES = re.compile(
    rb"^(# Protobuf Python Version: .*|GRPC_GENERATED_VERSION = .*|    _runtime_version\.Domain\.PUBLIC,(\n    \d+,){3})$",
    re.MULTILINE,
)


def _normalized(data: bytes) -> bytes:
    return _VERSION_LINES.sub(b"<generator version>", data)


def stale_files(
    out_dir: Path = REPO_ROOT, proto_root: Path = PROTO_ROOT, *, ignore_generator_version: bool = True
) -> list[Path]:
    """Generated files under out_dir that are missing or differ from a fresh generation."""
    stale: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="mkhub-codegen-check-") as tmp:
        _run_protoc(proto_root, Path(tmp))
        for rel in expected_outputs(proto_root):
            have = out_dir / rel
            if not have.exists():
                stale.append(have)
                continue
            fresh, current = (Path(tmp) / rel).read_bytes(), have.read_bytes()
            if ignore_generator_version:
                fresh, current = _normalized(fresh), _normalized(current)
            if fresh != current:
                stale.append(have)
    return stale


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hub.federation.codegen",
        description="Regenerate the Python code of proto/ (the mkhub package) in place.",
    )
    parser.add_argument(
        "--out", type=Path, default=REPO_ROOT, help="package root to write into (default: the repo)"
    )
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if the generated code is stale"
    )
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files(args.out)
        for path in stale:
            print(f"stale: {path}", file=sys.stderr)
        if stale:
            print("run: python -m hub.federation.codegen", file=sys.stderr)
        return 1 if stale else 0
    for path in generate(args.out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
