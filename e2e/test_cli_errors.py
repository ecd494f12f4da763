"""Bad input through the real CLI and hub: one line on stderr naming the object and field,
a non-zero exit code, and nothing stored (checked with ``mkhub get``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_harness import one_queue_setup, run_cli

from hub.demo.processes import HubProcess

pytestmark = pytest.mark.timeout(120)

BASE = one_queue_setup(cpu=4)

WORKLOAD = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata: {name: wl-1, namespace: team-a}
spec:
  queueName: user-queue
  podSets:
  - count: 1
    template: {spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}}
"""

# name -> (manifest, what the one error line must contain, (kind, namespace) to check nothing was stored)
CASES: dict[str, tuple[str, list[str], tuple[str, str]]] = {
    "malformed manifest": (
        WORKLOAD.replace("spec:\n  queueName: user-queue", "spec:\n  queueName: [user-queue]"),
        ['Workload "team-a/wl-1" is invalid', "spec.queueName"],
        ("wl", "team-a"),
    ),
    "malformed yaml": (
        WORKLOAD.replace("metadata: {name: wl-1, namespace: team-a}", "metadata: {name: wl-1, namespace: team-a"),
        ["error parsing", "bad.yaml", "line"],
        ("wl", "team-a"),
    ),
    "unknown kind": (
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueu\nmetadata: {name: typo}\nspec: {}\n",
        ['ClusterQueu "typo" is invalid', "kind", "unknown kind"],
        ("cq", ""),
    ),
    "missing namespace": (
        WORKLOAD.replace("namespace: team-a", "namespace: team-z"),
        ['Workload "team-z/wl-1" is invalid', "metadata.namespace", 'namespace "team-z" not found'],
        ("wl", "team-z"),
    ),
    "quota not a quantity": (
        BASE.split("---")[2].replace("name: cluster-queue", "name: cq-2").replace("nominalQuota: 4", "nominalQuota: four"),
        ['ClusterQueue "cq-2" is invalid', "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota", "not a quantity"],
        ("cq", ""),
    ),
    "kind not served": (
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: rj, namespace: team-a}\nspec: {}\n",
        ['Widget "team-a/rj" is invalid', "kind", "not served by mkhub"],
        ("wl", "team-a"),
    ),
}


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubProcess]:
    base = tmp_path_factory.mktemp("errors")
    with HubProcess(base / "data") as proc:
        done = run_cli(["apply", "-f", "-", *proc.connection_args()], stdin=BASE)
        assert done.returncode == 0, done.stderr
        yield proc


def names(hub: HubProcess, kind: str, namespace: str) -> set[str]:
    args = ["get", kind, "-o", "name", *hub.connection_args()]
    if namespace:
        args += ["-n", namespace]
    done = run_cli(args)
    assert done.returncode == 0, done.stderr
    return {line.split("/", 1)[1] for line in done.stdout.split()}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_and_stores_nothing(hub: HubProcess, tmp_path: Path, case: str) -> None:
    text, expected, (kind, namespace) = CASES[case]
    before = names(hub, kind, namespace)
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    done = run_cli(["apply", "-f", str(path), *hub.connection_args()])
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ")
    for part in expected:
        assert part in lines[0], (part, lines[0])
    assert done.stdout == ""
    assert names(hub, kind, namespace) == before


def test_a_bad_document_keeps_only_itself_out(hub: HubProcess) -> None:
    good = "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-new}\n"
    bad = WORKLOAD.replace("namespace: team-a", "namespace: team-new").replace("queueName: user-queue", "queueName: [nope]")
    done = run_cli(["apply", "-f", "-", *hub.connection_args()], stdin=good + "---" + bad)
    assert done.returncode == 1  # as kubectl: each object on its own, non-zero when any failed
    assert done.stdout == "namespace/team-new created\n"
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and 'Workload "team-new/wl-1" is invalid: spec.queueName' in lines[0]
    assert "team-new" in names(hub, "ns", "")
    assert "wl-1" not in names(hub, "wl", "team-new")


def test_unknown_kind_on_get_and_describe(hub: HubProcess) -> None:
    for args in (["get", "gizmos"], ["describe", "gizmo", "x"], ["delete", "gizmo", "x"]):
        done = run_cli([*args, *hub.connection_args()])
        assert done.returncode == 1
        assert done.stderr.strip() == 'error: the server doesn\'t have a resource type "gizmo' + ("s" if args[1] == "gizmos" else "") + '"'


def test_missing_file(hub: HubProcess) -> None:
    done = run_cli(["apply", "-f", "/nonexistent/x.yaml", *hub.connection_args()])
    assert done.returncode == 1 and done.stderr.strip() == 'error: the path "/nonexistent/x.yaml" does not exist'
