"""The wheel on its own: built from the checkout, installed into a fresh virtualenv outside it, and
``mkhub demo --jobs 4`` run from there (the sample manifests are package data); then what the
image (Dockerfile: this wheel installed) runs: the hub and agent Deployments' commands.

It builds with pip and installs from PyPI (or pip's cache), which takes minutes on a busy 2-core
machine, so it runs only when asked: ``make test-wheel`` (MKHUB_WHEEL_TEST=1), as CI does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from image_harness import run_the_deployments

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.timeout(1200),
    pytest.mark.skipif(os.environ.get("MKHUB_WHEEL_TEST") != "1", reason="builds and installs a wheel: make test-wheel"),
]


def run(args: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith("MKHUB_")}
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{' '.join(args)}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built and installed into a fresh virtualenv: its bin directory."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    wheels = tmp_path / "wheels"
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(wheels), str(ROOT)], cwd=tmp_path)
    (wheel,) = wheels.glob("mkhub-*.whl")
    env_dir = tmp_path / "fresh-venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], cwd=tmp_path)
    return env_dir / "bin"


def test_the_wheel_runs_the_demo_outside_the_checkout(installed: Path, tmp_path: Path) -> None:
    env_dir = installed.parent
    python = installed / "python"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # Nothing of the checkout is importable from here: the installed package must stand alone.
    where = run([str(python), "-c", "import hub, mkhub.v1.control_pb2; print(hub.__file__)"], cwd=elsewhere).stdout
    assert str(env_dir) in where and str(ROOT) not in where
    version = run([str(env_dir / "bin" / "mkhub"), "--version"], cwd=elsewhere).stdout
    assert version.startswith("mkhub ")
    demo = run([str(env_dir / "bin" / "mkhub"), "demo", "--jobs", "4"], cwd=elsewhere)
    assert "All 4 jobs finished" in demo.stdout and "none failed" in demo.stdout, demo.stdout


def test_the_images_commands_run_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    run([str(installed / "mkagent"), "--help"], cwd=tmp_path)
    run_the_deployments(installed, tmp_path)
