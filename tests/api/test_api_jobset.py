"""jobset.x-k8s.io/v1alpha2 JobSet: parsed with JobSet's defaults, refused as JobSet's webhook and CRD refuse it."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hub.api.errors import ValidationError
from hub.api.jobset_kind import JobSet
from hub.api.registry import parse_object, validate_update
from tests.hypothesis_budget import examples


def pod(cpu: Any = "1") -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}]}}


def rjob(name: str = "workers", replicas: Any = 2, **job_spec: Any) -> dict[str, Any]:
    return {"name": name, "replicas": replicas, "template": {"spec": {"template": pod(), **job_spec}}}


def jobset(*replicated: dict[str, Any], name: str = "js", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": name, "namespace": "team", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"replicatedJobs": list(replicated) if replicated else [rjob()], **spec},
    }


def parsed(manifest: dict[str, Any]) -> JobSet:
    obj = parse_object(manifest)
    assert isinstance(obj, JobSet)
    return obj


def refusal(manifest: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as info:
        parse_object(manifest)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f'JobSet "team/{manifest["metadata"]["name"]}" is invalid: ')
    return message


def test_a_jobset_is_read_with_jobsets_defaults() -> None:
    js = parsed(jobset(rjob("driver", replicas=None), rjob("workers", 3, parallelism=4, completions=2),
                       managedBy="kueue.x-k8s.io/multikueue", suspend=True))
    driver, workers = js.replicated_jobs
    assert (driver.name, driver.replicas, driver.parallelism, driver.completions) == ("driver", 1, 1, None)
    assert (driver.completion_mode, driver.group_name) == ("Indexed", "default")
    assert (workers.replicas, workers.pods_per_replica, workers.pods_count) == (3, 2, 6)
    assert workers.pod_spec.containers[0].requests == (("cpu", 1000),)
    assert js.suspend and js.managed_by == "kueue.x-k8s.io/multikueue" and js.queue_name == "lq"
    assert (js.success_operator, js.startup_policy_order) == ("All", "AnyOrder")


def test_the_status_is_read() -> None:
    m = jobset()
    m["status"] = {"restarts": 2, "terminalState": "Completed",
                   "conditions": [{"type": "Completed", "status": "True", "reason": "AllJobsCompleted", "message": "ok"}],
                   "replicatedJobsStatus": [{"name": "workers", "ready": 1, "succeeded": 2, "failed": 0, "active": 1,
                                             "suspended": 0}]}
    status = parsed(m).status
    assert (status.restarts, status.terminal_state, status.conditions[0].type) == (2, "Completed", "Completed")
    assert (status.replicated_jobs_status[0].ready, status.replicated_jobs_status[0].succeeded) == (1, 2)


def _without(path: tuple[Any, ...]) -> dict[str, Any]:
    m = jobset()
    node: Any = m
    for step in path[:-1]:
        node = node[step]
    del node[path[-1]]
    return m


RJ = ("spec", "replicatedJobs", 0)
BAD: dict[str, tuple[dict[str, Any], str]] = {
    "no replicatedJobs": (_without(("spec", "replicatedJobs")), "spec.replicatedJobs: Required value"),
    "empty replicatedJobs": (jobset(replicatedJobs=[]), "spec.replicatedJobs: Required value"),
    "replicatedJobs not a list": (jobset(replicatedJobs="w"), "spec.replicatedJobs: Invalid value: \"w\": must be a list"),
    "a replicatedJob not an object": (jobset(replicatedJobs=[3]), "spec.replicatedJobs[0]: Invalid value: 3: must be an object"),
    "no name": (_without((*RJ, "name")), "spec.replicatedJobs[0].name: Required value"),
    "no template": (_without((*RJ, "template")), "spec.replicatedJobs[0].template: Required value"),
    "no pod template": (_without((*RJ, "template", "spec", "template")),
                        "spec.replicatedJobs[0].template.spec.template: Required value"),
    "no containers": (_without((*RJ, "template", "spec", "template", "spec", "containers")),
                      "spec.replicatedJobs[0].template.spec.template.spec.containers: Required value"),
    "negative replicas": (jobset(rjob(replicas=-1)),
                          "spec.replicatedJobs[0].replicas: Invalid value: -1: must be greater than or equal to 0"),
    "replicas a string": (jobset(rjob(replicas="2")),
                          'spec.replicatedJobs[0].replicas: Invalid value: "2": must be an integer, not a string'),
    "replicas a fraction": (jobset(rjob(replicas=1.5)),
                            "spec.replicatedJobs[0].replicas: Invalid value: 1.5: must be an integer, not a number with a fraction"),
    "replicas beyond int32": (jobset(rjob(replicas=2**31)),
                              "spec.replicatedJobs[0].replicas: Invalid value: 2147483648: must fit in a 32-bit signed integer"),
    "negative parallelism": (jobset(rjob(parallelism=-2)),
                             "spec.replicatedJobs[0].template.spec.parallelism: Invalid value: -2: must be greater than or equal to 0"),
    "negative completions": (jobset(rjob(completions=-1)),
                             "spec.replicatedJobs[0].template.spec.completions: Invalid value: -1: must be greater than or equal to 0"),
    "completions a boolean": (jobset(rjob(completions=True)),
                              "spec.replicatedJobs[0].template.spec.completions: Invalid value: True: must be an integer"),
    "duplicate names": (jobset(rjob("w"), rjob("w")), 'spec.replicatedJobs[1].name: Duplicate value: "w"'),
    "name not a DNS label": (jobset(rjob("Workers")), 'spec.replicatedJobs[0].name: Invalid value: "Workers": a lowercase RFC 1123 label'),
    "name too long": (jobset(rjob("w" * 64)), "spec.replicatedJobs[0].name: Invalid value:"),
    "generated job names too long": (jobset(rjob("w" * 40), name="j" * 30), "metadata.name: Invalid value:"
                                     ' "jjjjjjjjjjjjjjjjjjjjjjjjjjjjjj": JobSet name is too long, job names generated for this JobSet'),
    "generated pod names too long": (jobset(rjob("w" * 25, completions=10), name="j" * 30),
                                     "JobSet name is too long, pod names generated for this JobSet will exceed 63 characters"),
    "replicas times parallelism beyond int32": (jobset(rjob(replicas=2**30, parallelism=4)),
                                                "the product of replicas and parallelism must not exceed 2147483647 for replicatedJob 'workers'"),
    "group name not DNS-1035": (jobset({**rjob(), "groupName": "1group"}),
                                'spec.replicatedJobs[0].groupName: Invalid value: "1group": a DNS-1035 label'),
    "managedBy without a path": (jobset(managedBy="kueue"),
                                 'spec.managedBy: Invalid value: "kueue": must be a domain-prefixed path (such as "acme.io/foo")'),
    "managedBy with a bad domain": (jobset(managedBy="Kueue_X/mk"), 'spec.managedBy: Invalid value: "Kueue_X": a lowercase RFC 1123 subdomain'),
    "managedBy with a bad path": (jobset(managedBy="kueue.x-k8s.io/multi kueue"),
                                  'spec.managedBy: Invalid value: "multi kueue": Invalid path'),
    "managedBy too long": (jobset(managedBy="kueue.x-k8s.io/" + "m" * 60),
                           "spec.managedBy: Invalid value: \"kueue.x-k8s.io/mmm"),
    "managedBy not a string": (jobset(managedBy=7), "spec.managedBy: Invalid value: 7: must be a string"),
    "suspend not a boolean": (jobset(suspend="yes"), 'spec.suspend: Invalid value: "yes": must be a boolean'),
    "success policy without operator": (jobset(successPolicy={}), "spec.successPolicy.operator: Required value"),
    "success policy operator unknown": (jobset(successPolicy={"operator": "Most"}),
                                        "spec.successPolicy.operator: Invalid value: \"Most\": supported values: 'All', 'Any'"),
    "success policy naming an unknown replicatedJob": (
        jobset(successPolicy={"operator": "All", "targetReplicatedJobs": ["driver"]}),
        "spec.successPolicy.targetReplicatedJobs[0]: Invalid value: \"driver\": invalid replicatedJob name 'driver' "
        "does not appear in .spec.ReplicatedJobs"),
    "failure policy rule without action": (jobset(failurePolicy={"rules": [{"name": "r"}]}),
                                           "spec.failurePolicy.rules[0].action: Required value"),
    "failure policy rule with a bad name": (jobset(failurePolicy={"rules": [{"name": "1r", "action": "FailJobSet"}]}),
                                            "spec.failurePolicy.rules[0].name: Invalid value: \"1r\": invalid failure policy rule name '1r'"),
    "failure policy rules sharing a name": (
        jobset(failurePolicy={"rules": [{"name": "r", "action": "FailJobSet"}, {"name": "r", "action": "RestartJobSet"}]}),
        "spec.failurePolicy.rules[1].name: Invalid value: \"r\": rule names are not unique"),
    "failure policy rule with an unknown reason": (
        jobset(failurePolicy={"rules": [{"action": "FailJobSet", "onJobFailureReasons": ["OOMKilled"]}]}),
        "spec.failurePolicy.rules[0].onJobFailureReasons[0]: Invalid value: \"OOMKilled\": invalid job failure reason"),
    "failure policy restart strategy unknown": (jobset(failurePolicy={"restartStrategy": "Reboot"}),
                                                "spec.failurePolicy.restartStrategy: Invalid value: \"Reboot\": supported values"),
    "failure policy max restarts negative": (jobset(failurePolicy={"maxRestarts": -1}),
                                             "spec.failurePolicy.maxRestarts: Invalid value: -1: must be greater than or equal to 0"),
    "dependsOn on the first replicatedJob": (jobset({**rjob("a"), "dependsOn": [{"name": "b", "status": "Ready"}]}),
                                             "DependsOn can't be set for the first ReplicatedJob"),
    "dependsOn a later replicatedJob": (jobset(rjob("a"), {**rjob("b"), "dependsOn": [{"name": "c", "status": "Ready"}]}),
                                        "replicatedJob: b cannot depend on replicatedJob: c"),
    "dependsOn status unknown": (jobset(rjob("a"), {**rjob("b"), "dependsOn": [{"name": "a", "status": "Done"}]}),
                                 "spec.replicatedJobs[1].dependsOn[0].status: Invalid value: \"Done\""),
    "InOrder startup with dependsOn": (jobset(rjob("a"), {**rjob("b"), "dependsOn": [{"name": "a", "status": "Ready"}]},
                                              startupPolicy={"startupPolicyOrder": "InOrder"}),
                                       "StartupPolicy and DependsOn APIs are mutually exclusive"),
    "network subdomain not DNS-1035": (jobset(network={"subdomain": "My.net"}),
                                       'spec.network.subdomain: Invalid value: "My.net": a DNS-1035 label'),
    "coordinator of an unknown replicatedJob": (jobset(coordinator={"replicatedJob": "driver"}),
                                                "coordinator replicatedJob driver does not exist"),
    "coordinator job index out of range": (jobset(coordinator={"replicatedJob": "workers", "jobIndex": 5}),
                                           "coordinator job index 5 is invalid for replicatedJob workers"),
    "negative cpu request": (jobset({**rjob(), "template": {"spec": {"template": pod("-1")}}}),
                             "spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.requests[cpu]: "
                             "Invalid value: \"-1\": must be greater than or equal to 0"),
    "ttl negative": (jobset(ttlSecondsAfterFinished=-5),
                     "spec.ttlSecondsAfterFinished: Invalid value: -5: must be greater than or equal to 0"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_shape_is_refused_naming_the_field(case: str) -> None:
    manifest, expected = BAD[case]
    assert expected in refusal(copy.deepcopy(manifest))


def test_every_refusal_is_reported_at_once() -> None:
    message = refusal(jobset(rjob("w"), rjob("w"), managedBy="kueue", successPolicy={"operator": "All",
                                                                                      "targetReplicatedJobs": ["x"]}))
    assert "spec.managedBy" in message and "spec.replicatedJobs[1].name" in message
    assert "spec.successPolicy.targetReplicatedJobs[0]" in message


# --- generated manifests: parsed or refused with a field path, never a traceback -----------------------

_ANY = st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False),
                 st.text(max_size=8), st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
_NAMES = st.one_of(st.sampled_from(["w", "driver", "Bad_Name", "", "a" * 70, "1x"]), _ANY)


def _maybe(value: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(value, _ANY)


@st.composite
def _replicated_jobs(draw: st.DrawFn) -> Any:
    job_spec = draw(st.fixed_dictionaries({}, optional={
        "parallelism": _maybe(st.integers(-2, 5)), "completions": _maybe(st.integers(-2, 5)),
        "completionMode": _maybe(st.sampled_from(["Indexed", "NonIndexed", "Sometimes"])),
        "template": _maybe(st.just(pod())),
    }))
    rj = draw(st.fixed_dictionaries({}, optional={
        "name": _NAMES, "replicas": _maybe(st.integers(-2, 2**31)), "groupName": _maybe(st.sampled_from(["g", "G!"])),
        "template": _maybe(st.just({"spec": job_spec})),
        "dependsOn": _maybe(st.lists(st.fixed_dictionaries({"name": _NAMES, "status": _maybe(st.just("Ready"))}),
                                     max_size=2)),
    }))
    return rj


_SPECS = st.fixed_dictionaries({}, optional={
    "replicatedJobs": _maybe(st.lists(_maybe(_replicated_jobs()), max_size=3)),
    "suspend": _ANY, "managedBy": _maybe(st.sampled_from(["kueue.x-k8s.io/multikueue", "x", "a/b/c", "/x", "A/"])),
    "successPolicy": _maybe(st.fixed_dictionaries({}, optional={"operator": _maybe(st.just("Any")),
                                                                "targetReplicatedJobs": _maybe(st.lists(_NAMES, max_size=2))})),
    "failurePolicy": _maybe(st.fixed_dictionaries({}, optional={
        "maxRestarts": _ANY, "restartStrategy": _ANY,
        "rules": _maybe(st.lists(st.fixed_dictionaries({}, optional={"name": _NAMES, "action": _maybe(st.just("FailJobSet")),
                                                                     "onJobFailureReasons": _ANY,
                                                                     "targetReplicatedJobs": _ANY}), max_size=2))})),
    "startupPolicy": _maybe(st.fixed_dictionaries({"startupPolicyOrder": _maybe(st.just("InOrder"))})),
    "network": _maybe(st.fixed_dictionaries({}, optional={"subdomain": _NAMES, "enableDNSHostnames": _ANY})),
    "coordinator": _maybe(st.fixed_dictionaries({}, optional={"replicatedJob": _NAMES, "jobIndex": _ANY, "podIndex": _ANY})),
    "ttlSecondsAfterFinished": _ANY,
})
_STATUS = _maybe(st.fixed_dictionaries({}, optional={
    "restarts": _ANY, "terminalState": _ANY, "conditions": _ANY,
    "replicatedJobsStatus": _maybe(st.lists(st.fixed_dictionaries({}, optional={"name": _NAMES, "ready": _ANY}), max_size=2)),
}))


@settings(max_examples=examples(300), derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(spec=_maybe(_SPECS), status=_STATUS)
def test_generated_jobsets_are_parsed_or_refused_with_a_field_path(spec: Any, status: Any) -> None:
    manifest = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                "metadata": {"name": "js", "namespace": "team"}, "spec": spec, "status": status}
    try:
        parse_object(manifest)
    except ValidationError as exc:
        assert exc.errors and "\n" not in str(exc)
        for err in exc.errors:
            assert err.path.split(".")[0].split("[")[0] in ("spec", "status", "metadata"), err


# --- updates: JobSet's ValidateUpdate -------------------------------------------------------------------


def update_refusal(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    try:
        validate_update(parsed(old), parsed(new))
    except ValidationError as exc:
        return str(exc)
    return None


def _pod_template(m: dict[str, Any], i: int = 0) -> dict[str, Any]:
    return m["spec"]["replicatedJobs"][i]["template"]["spec"]["template"]  # type: ignore[no-any-return]


def test_replicated_jobs_and_managed_by_are_immutable() -> None:
    old = jobset(managedBy="kueue.x-k8s.io/multikueue")
    more = copy.deepcopy(old)
    more["spec"]["replicatedJobs"][0]["replicas"] = 3
    assert update_refusal(old, more) == 'JobSet "team/js" is invalid: spec.replicatedJobs: field is immutable'
    other = copy.deepcopy(old)
    other["spec"]["managedBy"] = "example.com/mine"
    assert update_refusal(old, other) == ('JobSet "team/js" is invalid: spec.managedBy: Invalid value: '
                                          '"example.com/mine": field is immutable')
    assert update_refusal(old, copy.deepcopy(old)) is None


def test_kueues_scheduling_directives_change_only_while_suspended() -> None:
    def admitted(m: dict[str, Any], suspend: bool) -> dict[str, Any]:
        out = copy.deepcopy(m)
        out["spec"]["suspend"] = suspend
        template = _pod_template(out)
        template.setdefault("metadata", {})["labels"] = {"kueue.x-k8s.io/podset": "workers"}
        template["spec"].update({"nodeSelector": {"pool": "spot"}, "tolerations": [{"key": "spot", "operator": "Exists"}],
                                 "schedulingGates": [{"name": "g"}]})
        return out

    suspended = jobset(suspend=True)
    assert update_refusal(suspended, admitted(suspended, False)) is None  # started with the admission
    running = admitted(suspended, False)
    assert update_refusal(running, jobset(suspend=True)) is None  # stopped and restored at once
    assert update_refusal(jobset(suspend=False), admitted(suspended, False)) == (
        'JobSet "team/js" is invalid: spec.replicatedJobs: field is immutable')
    image = copy.deepcopy(suspended)
    _pod_template(image)["spec"]["containers"][0]["image"] = "other"
    assert update_refusal(suspended, image) is not None  # the rest stays immutable while suspended
