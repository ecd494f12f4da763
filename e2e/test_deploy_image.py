"""The commands of the image's Deployments (manifests/overlays), run from the checkout's
installation: the hub reaches ready (its probes, /metrics, the leader Lease) and the agent
connects to it. ``make test-wheel`` runs the same from the wheel installed into a fresh
virtualenv outside the checkout (e2e/test_wheel.py), which is what the Dockerfile installs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from image_harness import run_the_deployments

pytestmark = pytest.mark.timeout(240)


def test_the_deployments_commands_run(tmp_path: Path) -> None:
    run_the_deployments(Path(sys.executable).parent, tmp_path)
