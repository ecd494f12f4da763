"""A missing kubectl skips the kubectl tests locally and fails them in CI (CI=true)."""

from __future__ import annotations

import json
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


def fake_kubectl(tmp_path: Path, minor: str) -> str:
    exe = tmp_path / "kubectl"
    answer = json.dumps({"clientVersion": {"major": "1", "minor": minor}})
    exe.write_text(f"#!/bin/sh\necho '{answer}'\n")
    exe.chmod(0o755)
    return str(exe)


def test_an_installed_kubectl_runs_the_test(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    kubectl_or_skip(fake_kubectl(tmp_path, "32+"))


def test_a_kubectl_too_old_for_the_tests_counts_as_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Debian bookworm's kubernetes-client is v1.20: it would fail the tests for its age, not for mkhub."""
    path = fake_kubectl(tmp_path, "20")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="is v1.20; the kubectl tests need v1.32 or newer"):
        kubectl_or_skip(path)
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="v1.20"):
        kubectl_or_skip(path)
