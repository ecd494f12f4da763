"""Build hook: generate the protocol code (package ``mkhub``) from proto/ at build time.

All metadata lives in pyproject.toml; this file only adds the ``build_proto``
step to setuptools' ``build``:

* ``pip install .`` / wheels: the modules are generated into build_lib, after
  build_py has copied the hand-written ``mkhub/__init__.py`` files, so a stale
  copy lying in the source tree can never end up in the wheel.
* ``pip install -e .`` (PEP 660): setuptools sets ``editable_mode``; the
  modules are generated in place next to ``mkhub/v1/__init__.py``, where the
  editable finder imports them from.
* The sample manifests (``manifests/samples``) are copied into the wheel as
  package data, ``hub/manifests/samples`` (see hub/paths.py); an editable
  install reads them from the checkout.

The generator itself is hub/federation/codegen.py, loaded by path because the
``hub`` package is not importable inside an isolated build environment.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from types import ModuleType

from setuptools import Command, setup
from setuptools.command.build import build

ROOT = Path(__file__).resolve().parent
SAMPLES = Path("manifests") / "samples"


def _codegen() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "_mkhub_codegen", ROOT / "hub" / "federation" / "codegen.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class build_proto(Command):
    description = "generate Python code from proto/ with grpc_tools.protoc"
    user_options: list[tuple[str, str | None, str]] = []

    def initialize_options(self) -> None:
        self.build_lib: str | None = None
        self.editable_mode = False

    def finalize_options(self) -> None:
        self.set_undefined_options("build_py", ("build_lib", "build_lib"))

    def _out_dir(self) -> Path:
        return ROOT if self.editable_mode else Path(self.build_lib or "build/lib")

    def run(self) -> None:
        written = _codegen().generate(self._out_dir(), ROOT / "proto")
        for path in written:
            self.announce(f"generated {path}", level=2)
        if not self.editable_mode:
            # The sample manifests travel in the wheel (``mkhub demo`` needs them): hub/manifests/samples.
            for source in sorted((ROOT / SAMPLES).rglob("*.yaml")):
                target = self._out_dir() / "hub" / SAMPLES / source.relative_to(ROOT / SAMPLES)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)

    # The build sub-command protocol (setuptools.command.build.SubCommand).
    def get_source_files(self) -> list[str]:
        return [str(Path("proto") / p) for p in _codegen().proto_files(ROOT / "proto")]

    def get_outputs(self) -> list[str]:
        build_lib = Path(self.build_lib or "build/lib")
        samples = [] if self.editable_mode else [
            str(build_lib / "hub" / SAMPLES / s.relative_to(ROOT / SAMPLES)) for s in sorted((ROOT / SAMPLES).rglob("*.yaml"))
        ]
        return [str(build_lib / p) for p in _codegen().expected_outputs(ROOT / "proto")] + samples

    def get_output_mapping(self) -> dict[str, str]:
        if not self.editable_mode:
            return {}
        # Tell the editable wheel where each in-place generated file stands in.
        return {
            str(Path(self.build_lib or "build/lib") / p): str(ROOT / p)
            for p in _codegen().expected_outputs(ROOT / "proto")
        }


class build_with_proto(build):
    # After build_py: see the module docstring.
    sub_commands = [*build.sub_commands, ("build_proto", None)]


setup(cmdclass={"build": build_with_proto, "build_proto": build_proto})
