"""mkhub dev-cluster's refusals: one line naming the problem, exit 1, nothing started."""

from __future__ import annotations

from pathlib import Path

import pytest

from hub.service.devcluster import DevClusterOptions, dev_cluster_main, kubeconfig_text


def test_non_loopback_listen_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert dev_cluster_main(DevClusterOptions(tmp_path / "d", listen="0.0.0.0:6443")) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: --listen 0.0.0.0:6443: ") and "loopback" in err and err.count("\n") == 1
    assert not (tmp_path / "d").exists()


def test_bad_node_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text("nodes:\n- labels: {a: b}\n")
    assert dev_cluster_main(DevClusterOptions(tmp_path / "d", listen="127.0.0.1:0", nodes_file=nodes)) == 1
    assert capsys.readouterr().err == f"error: {nodes}: nodes[0].name: Required value\n"


def test_kubeconfig_points_at_the_server() -> None:
    import yaml

    doc = yaml.safe_load(kubeconfig_text("http://127.0.0.1:6443"))
    assert doc["clusters"][0]["cluster"]["server"] == "http://127.0.0.1:6443"
    assert doc["current-context"] == "mkhub-dev"


def test_an_empty_watch_window_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert dev_cluster_main(DevClusterOptions(tmp_path / "d", listen="127.0.0.1:0", watch_window=0)) == 1
    assert capsys.readouterr().err == "error: --watch-window 0: must be at least 1 (changes kept for watches)\n"
    assert not (tmp_path / "d").exists()
