"""Issue 15's bad input through the real CLI and hub: negative requests, Kubernetes' size and
name limits, malformed shapes, label rules, int32 and type errors. Each is one line on stderr
naming the object and the field, a non-zero exit, nothing stored, and no traceback anywhere."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cli_harness import one_queue_setup, run_cli

from hub.demo.processes import HubProcess

pytestmark = pytest.mark.timeout(300)

BASE = one_queue_setup(cpu=8)


def job(name: str = "job-1", cpu: str = "1", **spec: object) -> dict[str, object]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {
            "parallelism": 1,
            **spec,
            "template": {"spec": {"restartPolicy": "Never",
                                  "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}},
        },
    }


def with_meta(manifest: dict[str, object], **meta: object) -> dict[str, object]:
    out = json.loads(json.dumps(manifest))
    out["metadata"].update(meta)
    return out


CQ = yaml.safe_load(BASE.split("---")[2])
WORKLOAD = {
    "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "wl-1", "namespace": "team-a"},
    "spec": {"queueName": "user-queue", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "-1"}}}]}}}]},
}


def _cq(**spec: object) -> dict[str, object]:
    out = json.loads(json.dumps(CQ))
    out["metadata"]["name"] = "cq-2"
    out["spec"].update(spec)
    return out


# name -> (manifest or raw text, what the one error line must contain, (kind, namespace) that must not grow)
CASES: dict[str, tuple[object, list[str], tuple[str, str]]] = {
    "negative job request": (
        job(cpu="-100"),
        ['Job "team-a/job-1" is invalid', "spec.template.spec.containers[0].resources.requests[cpu]", "greater than or equal to 0"],
        ("jobs", "team-a"),
    ),
    "negative workload request": (
        WORKLOAD, ['Workload "team-a/wl-1" is invalid', "resources.requests[cpu]", "greater than or equal to 0"], ("wl", "team-a"),
    ),
    "negative quota": (
        _cq(resourceGroups=[{"coveredResources": ["cpu"], "flavors": [
            {"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": "-4"}]}]}]),
        ['ClusterQueue "cq-2" is invalid', "nominalQuota", "greater than or equal to 0"],
        ("cq", ""),
    ),
    "annotations over 256 KiB": (
        with_meta(job(), annotations={"big": "x" * (300 * 1024)}),
        ['Job "team-a/job-1" is invalid', "metadata.annotations", "at most 262144 bytes"],
        ("jobs", "team-a"),
    ),
    "object over 1.5 MiB": (
        with_meta(job(), annotations={f"a{i}": "x" * 200_000 for i in range(9)}),
        ['Job "team-a/job-1" is invalid', "an object must have at most 1572864 bytes"],
        ("jobs", "team-a"),
    ),
    "metadata a string": (
        "apiVersion: batch/v1\nkind: Job\nmetadata: foo\nspec: {}\n", ["Job", "metadata", "must be an object"], ("jobs", "team-a"),
    ),
    "list where a map belongs": (
        {**job(), "spec": [1, 2]}, ['Job "team-a/job-1" is invalid', "spec: Invalid value", "must be an object"], ("jobs", "team-a"),
    ),
    "template a string": (
        {**job(), "spec": {"template": "x"}}, ['Job "team-a/job-1" is invalid', "spec.template"], ("jobs", "team-a"),
    ),
    "yaml nested 1000 deep": (
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: deep}\nspec: " + "[" * 1000 + "]" * 1000 + "\n",
        ["error parsing", "nested deeper than 100 levels"],
        ("jobs", "team-a"),
    ),
    "label key with a space": (
        with_meta(job(), labels={"bad key!": "x", "kueue.x-k8s.io/queue-name": "user-queue"}),
        ['Job "team-a/job-1" is invalid', "metadata.labels", "bad key!"],
        ("jobs", "team-a"),
    ),
    "label key of 70 characters": (
        with_meta(job(), labels={"k" * 70: "x", "kueue.x-k8s.io/queue-name": "user-queue"}),
        ["metadata.labels", "name part must be no more than 63 characters"],
        ("jobs", "team-a"),
    ),
    "label value of 64 characters": (
        with_meta(job(), labels={"team": "v" * 64, "kueue.x-k8s.io/queue-name": "user-queue"}),
        ["metadata.labels", "must be no more than 63 characters"],
        ("jobs", "team-a"),
    ),
    "namespaceSelector key and value": (
        _cq(namespaceSelector={"matchExpressions": [{"key": "bad key!", "operator": "In", "values": ["no spaces"]}]}),
        ['ClusterQueue "cq-2" is invalid', "spec.namespaceSelector.matchExpressions[0].key",
         "spec.namespaceSelector.matchExpressions[0].values[0]"],
        ("cq", ""),
    ),
    "namespace name of 64 characters": (
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n" * 64}},
        ["Namespace", "metadata.name", "must be no more than 63 characters"],
        ("ns", ""),
    ),
    "completions 2^63": (
        job(completions=2**63), ['Job "team-a/job-1" is invalid', "spec.completions", "32-bit"], ("jobs", "team-a"),
    ),
    "parallelism a string": (
        job(parallelism="3"), ['Job "team-a/job-1" is invalid', "spec.parallelism", "must be an integer, not a string"],
        ("jobs", "team-a"),
    ),
    "job name of 253 characters": (
        job(name="j" * 253), ["Job", "metadata.name", "must be no more than 63 characters"], ("jobs", "team-a"),
    ),
    "indexed job name leaves no room for the index": (
        job(name="j" * 62, completions=10, completionMode="Indexed"),
        ["metadata.name", "will not able to create pod with invalid DNS label", "j" * 62 + "-9"],
        ("jobs", "team-a"),
    ),
}


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubProcess]:
    base = tmp_path_factory.mktemp("hardening")
    with HubProcess(base / "data") as proc:
        done = run_cli(["apply", "-f", "-", *proc.connection_args()], stdin=BASE)
        assert done.returncode == 0, done.stderr
        yield proc
        assert "Traceback" not in proc.log()
        assert " ERROR " not in proc.log()


def names(hub: HubProcess, kind: str, namespace: str) -> set[str]:
    args = ["get", kind, "-o", "name", *hub.connection_args()]
    if namespace:
        args += ["-n", namespace]
    done = run_cli(args)
    assert done.returncode == 0, done.stderr
    return {line.split("/", 1)[1] for line in done.stdout.split()}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_and_stores_nothing(hub: HubProcess, tmp_path: Path, case: str) -> None:
    manifest, expected, (kind, namespace) = CASES[case]
    before = names(hub, kind, namespace)
    path = tmp_path / "bad.yaml"
    path.write_text(manifest if isinstance(manifest, str) else json.dumps(manifest))
    done = run_cli(["apply", "-f", str(path), "-n", "team-a", *hub.connection_args()])
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr[:2000]
    assert lines[0].startswith("error: ")
    for part in expected:
        assert part in lines[0], (part, lines[0][:500])
    assert done.stdout == ""
    assert names(hub, kind, namespace) == before


def test_the_hub_refuses_a_request_over_3_mib_without_parsing_it(hub: HubProcess) -> None:
    """The CLI checks file by file; the hub refuses any request over the API server's 3 MiB."""
    text = json.dumps(job()) + "\n---\n" + "# " + "x" * (4 * 1024 * 1024) + "\n"
    with hub.channel() as channel:
        reply = hub.client(channel).apply(text, namespace="team-a")
    assert reply.rejected
    assert [r.error for r in reply.results if r.error] == [
        f"error parsing <input>: request entity too large: {len(text.encode())} bytes, the limit is 3145728"
    ]
    assert "job-1" not in names(hub, "jobs", "team-a")


def test_a_too_large_file_is_refused_by_the_cli(hub: HubProcess, tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_text(json.dumps(job()) + "\n#" + "x" * (50 * 1024 * 1024) + "\n")
    done = run_cli(["apply", "-f", str(path), *hub.connection_args()])
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"error: error parsing {path}: request entity too large: {path.stat().st_size} bytes, the limit is 3145728"
    ]


def test_get_receives_more_than_grpcs_default_4_mib(hub: HubProcess) -> None:
    """Many objects near the annotation limit: the List reply is far over gRPC's default receive size."""
    jobs = [with_meta(job(name=f"big-{i}", parallelism=0), annotations={"blob": "x" * 250_000}) for i in range(18)]
    for batch in (jobs[:9], jobs[9:]):  # each request under the 3 MiB limit
        done = run_cli(["apply", "-f", "-", *hub.connection_args()], stdin="\n---\n".join(json.dumps(j) for j in batch))
        assert done.returncode == 0, done.stderr
    try:
        done = run_cli(["get", "jobs", "-n", "team-a", "-o", "json", *hub.connection_args()])
        assert done.returncode == 0, done.stderr[:500]
        assert len(done.stdout) > 4_400_000  # gRPC's default limit is 4 MiB (4,194,304 bytes)
        assert {j["metadata"]["name"] for j in json.loads(done.stdout)["items"]} >= {f"big-{i}" for i in range(18)}
    finally:  # one command, as kubectl deletes several names
        run_cli(["delete", "job", *(f"big-{i}" for i in range(18)), "-n", "team-a", *hub.connection_args()])


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_get_all_namespaces_with_no_objects_prints_an_empty_list(hub: HubProcess, fmt: str) -> None:
    done = run_cli(["get", "workloadpriorityclasses", "-A", "-o", fmt, *hub.connection_args()])
    assert done.returncode == 0, done.stderr
    parsed = json.loads(done.stdout) if fmt == "json" else yaml.safe_load(done.stdout)
    assert parsed == {"apiVersion": "v1", "kind": "List", "items": [], "metadata": {"resourceVersion": ""}}
    done = run_cli(["get", "workloads", "-A", "-o", fmt, *hub.connection_args()])
    assert done.returncode == 0 and (json.loads(done.stdout) if fmt == "json" else yaml.safe_load(done.stdout))["items"] == []
