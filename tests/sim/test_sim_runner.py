"""``mkhub simulate``: output lines, exit codes and --json, as FORMAT.md specifies."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from hub.sim.runner import main

BASE = """
name: tiny
source: test
objects:
- {apiVersion: v1, kind: Namespace, metadata: {name: team}}
- {apiVersion: kueue.x-k8s.io/v1beta1, kind: ResourceFlavor, metadata: {name: default}}
- apiVersion: kueue.x-k8s.io/v1beta1
  kind: ClusterQueue
  metadata: {name: cq}
  spec:
    namespaceSelector: {}
    resourceGroups:
    - coveredResources: [cpu]
      flavors:
      - name: default
        resources: [{name: cpu, nominalQuota: '2'}]
- {apiVersion: kueue.x-k8s.io/v1beta1, kind: LocalQueue, metadata: {name: lq, namespace: team}, spec: {clusterQueue: cq}}
- apiVersion: kueue.x-k8s.io/v1beta1
  kind: Workload
  metadata: {name: big, namespace: team}
  spec:
    queueName: lq
    podSets:
    - name: main
      count: 1
      template: {spec: {containers: [{name: c, resources: {requests: {cpu: '3'}}}]}}
steps:
- schedule: {}
"""


def _write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(args), out=out)
    return code, out.getvalue()


def test_passing_scenario_prints_pass_and_exits_zero(tmp_path: Path) -> None:
    path = _write(tmp_path, BASE + "- expect: {pending: [team/big], admitted: {}, only: true}\n")
    code, out = _run(str(path))
    assert code == 0
    assert out.splitlines() == ["PASS tiny", "1 passed, 0 failed"]


def test_failing_expectation_names_step_expected_found_and_why(tmp_path: Path) -> None:
    path = _write(tmp_path, BASE + "- expect: {admitted: {team/big: {}}}\n")
    code, out = _run(str(path))
    assert code == 1
    line = out.splitlines()[0]
    assert line.startswith("FAIL tiny: step 1: team/big should be admitted, but is pending")
    # the why: the engine's own account of the decision
    assert "insufficient quota for cpu in flavor default" in line


def test_invalid_scenario_exits_two_naming_file_and_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, BASE + "- expect: {admited: {}}\n")
    code, _ = _run(str(path))
    assert code == 2
    err = capsys.readouterr().err
    assert str(path) in err and "steps[1].expect.admited" in err


def test_unknown_step_kind_is_invalid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, BASE + "- teleport: {}\n")
    assert _run(str(path))[0] == 2
    assert "steps[1]" in capsys.readouterr().err


def test_json_prints_final_state_of_every_workload(tmp_path: Path) -> None:
    path = _write(tmp_path, BASE)
    buf = io.StringIO()
    assert main([str(path)], as_json=True, out=buf) == 0
    data = json.loads(buf.getvalue())
    state = data[0]["workloads"]["manager"]["team/big"]
    assert state["state"] == "pending"
    assert state["conditions"]["QuotaReserved"]["reason"] == "ExceedsMaxQuota"
    assert "why" in state


def test_rejected_object_is_reported_and_state_unchanged(tmp_path: Path) -> None:
    text = BASE + """- update:
  - apiVersion: kueue.x-k8s.io/v1beta1
    kind: ClusterQueue
    metadata: {name: cq}
    spec:
      namespaceSelector: {}
      resourceGroups:
      - coveredResources: [cpu]
        flavors:
        - name: default
          resources: [{name: cpu, nominalQuota: '-1'}]
- expect: {rejected: [cq]}
- create:
  - apiVersion: kueue.x-k8s.io/v1beta1
    kind: Workload
    metadata: {name: small, namespace: team}
    spec:
      queueName: lq
      podSets:
      - name: main
        count: 1
        template: {spec: {containers: [{name: c, resources: {requests: {cpu: '2'}}}]}}
- schedule: {}
- expect: {admitted: {team/small: {}}, usage: {cq: {default: {cpu: '2'}}}}
"""
    code, out = _run(str(_write(tmp_path, text)))
    assert code == 0, out


def test_a_broken_install_is_not_reported_as_an_unsupported_feature(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the generated protocol code, a MultiKueue scenario raises the ImportError itself."""
    import sys

    from hub.sim.runner import run_file

    scenario = Path(__file__).resolve().parents[1] / "conformance" / "scenarios" / "multikueue"
    path = sorted(scenario.glob("*.yaml"))[0]
    monkeypatch.delitem(sys.modules, "hub.sim.federation", raising=False)
    # The session module is the one importing the generated code: as in a clone that never ran protoc.
    monkeypatch.setitem(sys.modules, "hub.federation.session", None)
    with pytest.raises(ImportError):
        run_file(path)
