"""Unknown fields through the real CLI and hub, as kubectl against a real API server: refused by
default naming the field's path, ``--validate=warn`` drops them with a warning, ``--validate=ignore``
(or ``false``) drops them; Kueue's fields mkhub stores without acting on them go in with a warning."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_harness import run_cli

from hub.demo.processes import HubProcess

pytestmark = pytest.mark.timeout(120)

EXAMPLE = Path(__file__).resolve().parent / "kueue-examples" / "concurrent-admission-setup.yaml"
GATED = """apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: gated, namespace: default}
spec:
  queueName: lq
  preemptionGates: [{name: example.com/gate}]
  podSets:
  - name: main
    count: 1
    template: {spec: {containers: [{name: c, image: busybox}]}}
"""
TYPO = """apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: NAME}
spec:
  namespaceSelector: {}
  bogusField: 3
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: spot
      resources: [{name: cpu, nominalQuota: 4}]
"""


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubProcess]:
    with HubProcess(tmp_path_factory.mktemp("fields") / "data") as proc:
        yield proc


def mkhub(hub: HubProcess, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    done = run_cli([*args, *hub.connection_args()], stdin=stdin)
    return done.returncode, done.stdout, done.stderr


def test_kueues_concurrent_admission_example_goes_in_without_a_warning(hub: HubProcess) -> None:
    code, out, err = mkhub(hub, "apply", "-f", str(EXAMPLE))
    assert code == 0, err
    assert "clusterqueue.kueue.x-k8s.io/team-cluster-queue created" in out
    assert "Warning" not in err, err  # the engine acts on the policy (with the ConcurrentAdmission gate)
    code, out, _ = mkhub(hub, "get", "cq", "team-cluster-queue", "-o", "json")
    assert json.loads(out)["spec"]["concurrentAdmissionPolicy"] == {"migration": {"mode": "TryPreferredFlavors"}}


def test_a_field_mkhub_does_not_act_on_goes_in_with_a_warning(hub: HubProcess) -> None:
    code, out, err = mkhub(hub, "apply", "-f", "-", stdin=GATED)
    assert code == 0 and "workload.kueue.x-k8s.io/gated created" in out, err
    assert ('Warning: Workload "default/gated": spec.preemptionGates is stored, but mkhub does not act on it '
            "(a closed gate blocks preemption (with the ConcurrentAdmission gate), but only concurrent admission opens one)") in err.splitlines()


def test_a_misspelt_field_is_refused_unless_validation_is_relaxed(hub: HubProcess, tmp_path: Path) -> None:
    path = tmp_path / "typo.yaml"
    path.write_text(TYPO.replace("NAME", "cq-strict"))
    code, out, err = mkhub(hub, "apply", "-f", str(path))
    assert (code, out) == (1, "")
    assert err.strip() == 'error: ClusterQueue "cq-strict": strict decoding error: unknown field "spec.bogusField"'
    assert mkhub(hub, "get", "cq", "cq-strict")[0] != 0

    code, out, err = mkhub(hub, "apply", "--validate=warn", "-f", "-", stdin=TYPO.replace("NAME", "cq-warn"))
    assert code == 0 and out.strip() == "clusterqueue.kueue.x-k8s.io/cq-warn created", err
    assert 'Warning: ClusterQueue "cq-warn": unknown field "spec.bogusField"' in err.splitlines()

    code, out, err = mkhub(hub, "create", "--validate=false", "-f", "-", stdin=TYPO.replace("NAME", "cq-ignore"))
    assert code == 0 and out.strip() == "clusterqueue.kueue.x-k8s.io/cq-ignore created", err
    assert "unknown field" not in err
    for name in ("cq-warn", "cq-ignore"):
        spec = json.loads(mkhub(hub, "get", "cq", name, "-o", "json")[1])["spec"]
        assert "bogusField" not in spec and spec["resourceGroups"][0]["flavors"][0]["name"] == "spot"


def test_an_unknown_validate_value_is_kubectls_error(hub: HubProcess) -> None:
    code, out, err = mkhub(hub, "apply", "--validate=loose", "-f", str(EXAMPLE))
    assert (code, out) == (1, "")
    assert err.strip() == ('error: invalid - validate option "loose"; must be one of: strict (or true), warn, '
                           "ignore (or false)")
