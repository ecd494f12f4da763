from __future__ import annotations

from pathlib import Path

import pytest

from hub.configfile import load_configuration_file as load_config

KUEUE_CONFIG = """
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
manageJobsWithoutQueueName: false
waitForPodsReady:
  enable: true
  timeout: 5m
featureGates:
  PartialAdmission: false
"""


def test_a_kueue_configuration_file(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(KUEUE_CONFIG)
    config = load_config(path)
    assert config.wait_for_pods_ready.enabled and config.wait_for_pods_ready.timeout == 300.0
    assert not config.gate("PartialAdmission")


def test_no_file_is_kueue_defaults() -> None:
    assert load_config(None).gate("PartialAdmission")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("waitForPodsReady: {timeout: soon}\n", "waitForPodsReady.timeout"),
        ("- a list\n", "must be a mapping"),
        ("a: [\n", "cannot read config"),
    ],
)
def test_bad_configuration_is_one_line(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(ValueError) as err:
        load_config(path)
    assert expected in str(err.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot read config"):
        load_config(tmp_path / "absent.yaml")


def test_serve_listens_on_loopback_unless_told(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's commands run ``mkhub serve`` without --listen on machines with other users:
    the gRPC port must not open on every interface by default."""
    import hub.service.serve as serve
    from hub.cli import main

    seen: list[str] = []
    monkeypatch.setattr(serve, "serve_main", lambda opts: seen.append(opts.listen) or 0)
    assert main(["serve", "--data-dir", str(tmp_path), "--tls-dir", str(tmp_path)]) == 0
    assert main(["serve", "--data-dir", str(tmp_path), "--tls-dir", str(tmp_path), "--listen", "0.0.0.0:7443"]) == 0
    assert seen == ["127.0.0.1:7443", "0.0.0.0:7443"]
