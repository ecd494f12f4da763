"""A missing kubectl skips the kubectl tests locally and fails them in CI (CI=true)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubectl_tool import kubectl_or_skip


def test_missing_kubectl_fails_in_ci(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="not installed.*CI=true"):
        kubectl_or_skip(str(tmp_path / "kubectl"))


def test_missing_kubectl_skips_outside_ci(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="make system-deps"):
        kubectl_or_skip(str(tmp_path / "kubectl"))


def test_a_file_that_cannot_run_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    (tmp_path / "kubectl").write_text("")
    with pytest.raises(pytest.fail.Exception):
        kubectl_or_skip(str(tmp_path / "kubectl"))


def test_an_installed_kubectl_runs_the_test(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    exe = tmp_path / "kubectl"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    kubectl_or_skip(str(exe))
