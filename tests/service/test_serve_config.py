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


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("apiVersion: config.kueue.x-k8s.io/v1beta2\nwaitForPodsReady: {timeout: 5m, timout: 10m}\n",
         'strict decoding error: unknown field "waitForPodsReady.timout"'),
        ("apiVersion: config.kueue.x-k8s.io/v1beta2\nwaitForPodsReady: {enable: true}\n",  # v1beta1 only
         'strict decoding error: unknown field "waitForPodsReady.enable"'),
        ("fairSharing: {enable: true}\nresources: {transformations: [{input: a, strategy: Retain, outputz: {}}]}\nbogus: 1\n",
         'strict decoding error: unknown field "resources.transformations[0].outputz", unknown field "bogus"'),
    ],
)
def test_unknown_fields_are_refused_with_their_path_as_kueues_loader_does(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(ValueError) as err:
        load_config(path)
    assert str(err.value) == f"config {path}: {expected}"


def test_kubernetes_types_inside_the_configuration_are_not_second_guessed(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
                    "leaderElection: {leaderElect: true, resourceName: c1f6bfd2.kueue.x-k8s.io}\n"
                    "managedJobsNamespaceSelector: {matchLabels: {team: a}}\n"
                    "multiKueue: {capacityAwareDispatcherConfig: {nominationTimeout: 30s}}\n")
    assert load_config(path).multikueue.nomination_timeout == 30.0


def test_every_configuration_file_in_the_repository_loads(tmp_path: Path) -> None:
    """The deployment's Configuration and every Configuration block of the README."""
    import re

    import yaml

    root = Path(__file__).resolve().parents[2]
    docs = [d for d in yaml.safe_load_all((root / "manifests/overlays/manager/config.yaml").read_text())]
    for block in re.findall(r"^```[a-z]*\n(.*?)^```", (root / "README.md").read_text(), re.S | re.M):
        if "kind: Configuration" in block:
            docs.extend(yaml.safe_load_all(block))
    configs = [d for d in docs if isinstance(d, dict) and d.get("kind") == "Configuration"]
    assert len(configs) >= 2
    for i, doc in enumerate(configs):
        path = tmp_path / f"config-{i}.yaml"
        path.write_text(yaml.safe_dump(doc))
        load_config(path)
