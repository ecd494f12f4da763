"""leaderworkerset.x-k8s.io/v1 LeaderWorkerSet: parsed with its webhook's defaults, refused as its webhook refuses it."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hub.api.errors import ValidationError
from hub.api.lws_kind import LeaderWorkerSet
from hub.api.registry import KINDS, parse_object, resolve_kind, validate_update
from tests.hypothesis_budget import examples


def pod(cpu: Any = "1") -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "c", "image": "vllm", "resources": {"requests": {"cpu": cpu}}}]}}


def lws(name: str = "serve", annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    template = {"size": 4, "workerTemplate": pod(), **spec.pop("lwt", {})}
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "namespace": "team", "labels": {"kueue.x-k8s.io/queue-name": "lq"},
                     **({"annotations": annotations} if annotations else {})},
        "spec": {"replicas": 2, "leaderWorkerTemplate": template, **spec},
    }


def parsed(m: dict[str, Any]) -> LeaderWorkerSet:
    obj = parse_object(copy.deepcopy(m))
    assert isinstance(obj, LeaderWorkerSet)
    return obj


def refusal(m: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as info:
        parse_object(copy.deepcopy(m))
    message = str(info.value)
    assert "\n" not in message and message.startswith(f'LeaderWorkerSet "team/{m["metadata"]["name"]}" is invalid: ')
    return message


def test_registered_under_its_short_name_and_applied_without_a_warning() -> None:
    # Not the engine's (its Pods are, through the pod integration); the embedded hub runs it.
    assert resolve_kind("lws") is KINDS["LeaderWorkerSet"] and not KINDS["LeaderWorkerSet"].acted_on
    assert not KINDS["LeaderWorkerSet"].passive_note


def test_read_with_the_webhooks_defaults() -> None:
    m = lws(lwt={"leaderTemplate": pod("2"), "restartPolicy": "Default"})
    del m["spec"]["replicas"]
    obj = parsed(m)
    assert (obj.replicas, obj.size, obj.restart_policy, obj.startup_policy, obj.subdomain_policy) == (
        1, 4, "None", "LeaderCreated", "Shared")
    assert (obj.max_unavailable, obj.max_surge, obj.partition) == (1, 0, 0)
    assert obj.leader_template.spec.per_pod_requests == (("cpu", 2000),)
    assert obj.worker.spec.per_pod_requests == (("cpu", 1000),) and obj.queue_name == "lq"
    no_leader = parsed(lws())
    assert no_leader.leader is None and no_leader.leader_template is no_leader.worker


def test_the_status_is_read() -> None:
    m = lws()
    m["status"] = {"readyReplicas": 1, "replicas": 2, "updatedReplicas": 2, "hpaPodSelector": "x=y",
                   "conditions": [{"type": "Available", "status": "True", "reason": "AllGroupsReady", "message": ""}]}
    status = parsed(m).status
    assert (status.ready_replicas, status.replicas, status.hpa_pod_selector, status.conditions[0].type) == (
        1, 2, "x=y", "Available")


BAD: dict[str, tuple[dict[str, Any], str]] = {
    "no leaderWorkerTemplate": ({**lws(), "spec": {"replicas": 1}}, "spec.leaderWorkerTemplate: Required value"),
    "no workerTemplate": (lws(lwt={"workerTemplate": None}), "spec.leaderWorkerTemplate.workerTemplate: Required value"),
    "worker without containers": (lws(lwt={"workerTemplate": {"spec": {}}}),
                                  "spec.leaderWorkerTemplate.workerTemplate.spec.containers: Required value"),
    "leader without containers": (lws(lwt={"leaderTemplate": {"metadata": {"labels": {"a": "b"}}}}),
                                  "spec.leaderWorkerTemplate.leaderTemplate.spec.containers: Required value"),
    "negative replicas": (lws(replicas=-1), "spec.replicas: Invalid value: -1: replicas must be equal or greater than 0"),
    "replicas a string": (lws(replicas="2"), 'spec.replicas: Invalid value: "2": must be an integer, not a string'),
    "size zero": (lws(lwt={"size": 0}), "spec.leaderWorkerTemplate.size: Invalid value: 0: size must be equal or greater than 1"),
    "size a fraction": (lws(lwt={"size": 2.5}), "spec.leaderWorkerTemplate.size: Invalid value: 2.5: must be an integer"),
    "replicas times size beyond int32": (lws(replicas=2**20, lwt={"size": 2**12}),
                                         "spec.replicas: Invalid value: 1048576: the product of replicas and worker "
                                         "replicas must not exceed 2147483647"),
    "name not DNS-1035": (lws(name="1serve"), 'metadata.name: Invalid value: "1serve": a DNS-1035 label'),
    "restart policy unknown": (lws(lwt={"restartPolicy": "Always"}),
                               'spec.leaderWorkerTemplate.restartPolicy: Invalid value: "Always": supported values'),
    "startup policy unknown": (lws(startupPolicy="Eager"), 'spec.startupPolicy: Invalid value: "Eager": supported values'),
    "subdomain policy missing": (lws(networkConfig={}), "spec.networkConfig.subdomainPolicy: Required value"),
    "rollout type unknown": (lws(rolloutStrategy={"type": "Recreate"}),
                             'spec.rolloutStrategy.type: Invalid value: "Recreate": supported values'),
    "maxUnavailable not a percent": (lws(rolloutStrategy={"rollingUpdateConfiguration": {"maxUnavailable": "5"}}),
                                     'spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable: Invalid value: "5": '
                                     "a valid percent string"),
    "maxSurge over 100%": (lws(rolloutStrategy={"rollingUpdateConfiguration": {"maxSurge": "150%"}}),
                           'spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge: Invalid value: "150%": '
                           "must not be greater than 100%"),
    "maxSurge negative": (lws(rolloutStrategy={"rollingUpdateConfiguration": {"maxSurge": -1}}),
                          "maxSurge: Invalid value: -1: must be greater than or equal to 0"),
    "maxUnavailable a list": (lws(rolloutStrategy={"rollingUpdateConfiguration": {"maxUnavailable": [1]}}),
                              "maxUnavailable: Invalid value: [1]: must be an integer or percentage"),
    "nothing may be unavailable or surge": (
        lws(rolloutStrategy={"rollingUpdateConfiguration": {"maxUnavailable": "10%", "maxSurge": 0}}),
        "spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable: Invalid value: \"10%\": must not be 0 when `maxSurge` is 0"),
    "partition negative": (lws(rolloutStrategy={"rollingUpdateConfiguration": {"partition": -2}}),
                           "partition: Invalid value: -2: must be greater than or equal to 0"),
    "subGroupSize missing": (lws(lwt={"subGroupPolicy": {}}), "spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize: Required value"),
    "subGroupSize zero": (lws(lwt={"subGroupPolicy": {"subGroupSize": 0}}), "subGroupSize must be equal or greater than 1"),
    "subGroupSize not dividing": (lws(lwt={"size": 7, "subGroupPolicy": {"subGroupSize": 4}}),
                                  "size or size - 1 must be divisible by subGroupSize"),
    "subGroupSize over size": (lws(lwt={"size": 2, "subGroupPolicy": {"subGroupSize": 3}}),
                               "subGroupSize cannot be larger than size"),
    "leader excluded not dividing": (lws(lwt={"size": 4, "subGroupPolicy": {"subGroupSize": 2,
                                                                             "subGroupPolicyType": "LeaderExcluded"}}),
                                     "size-1 must be divisible by subGroupSize when using LeaderExcluded"),
    "exclusive subgroups without subgroups": (lws(annotations={"leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology": "rack"}),
                                              "cannot have subgroup-exclusive-topology without subGroupSize set"),
    "negative cpu request": (lws(lwt={"workerTemplate": pod("-1")}),
                                "spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].resources.requests[cpu]: "
                                "Invalid value: \"-1\": must be greater than or equal to 0"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_shape_is_refused_naming_the_field(case: str) -> None:
    manifest, expected = BAD[case]
    assert expected in refusal(manifest)


def test_sub_group_size_is_set_once() -> None:
    with_groups = lws(lwt={"subGroupPolicy": {"subGroupSize": 2}})
    changed = lws(lwt={"subGroupPolicy": {"subGroupSize": 4}})
    for old, new, reason in ((with_groups, changed, "field is immutable"),
                             (lws(), with_groups, "cannot enable subGroupSize after the lws is already created"),
                             (with_groups, lws(), "cannot remove subGroupSize after enabled")):
        with pytest.raises(ValidationError) as info:
            validate_update(parsed(old), parsed(new))
        assert "spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize: Invalid value: " in str(info.value)
        assert reason in str(info.value)
    validate_update(parsed(lws()), parsed(lws(replicas=5)))  # scaling is an update like any other


_ANY = st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False),
                 st.text(max_size=6), st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


def _maybe(value: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(value, _ANY)


_SPECS = st.fixed_dictionaries({}, optional={
    "replicas": _maybe(st.integers(-2, 2**31)),
    "leaderWorkerTemplate": _maybe(st.fixed_dictionaries({}, optional={
        "size": _maybe(st.integers(-1, 9)), "workerTemplate": _maybe(st.just(pod())), "leaderTemplate": _maybe(st.just(pod())),
        "restartPolicy": _maybe(st.sampled_from(["None", "Default", "Never"])),
        "subGroupPolicy": _maybe(st.fixed_dictionaries({}, optional={"subGroupSize": _maybe(st.integers(-1, 9)),
                                                                     "subGroupPolicyType": _ANY})),
    })),
    "rolloutStrategy": _maybe(st.fixed_dictionaries({}, optional={
        "type": _ANY, "rollingUpdateConfiguration": _maybe(st.fixed_dictionaries({}, optional={
            "maxUnavailable": _maybe(st.sampled_from([0, 1, "0%", "50%", "101%", "x"])),
            "maxSurge": _maybe(st.sampled_from([0, 2, "0%", "10%"])), "partition": _ANY}))})),
    "startupPolicy": _ANY, "networkConfig": _maybe(st.fixed_dictionaries({}, optional={"subdomainPolicy": _ANY})),
})


@settings(max_examples=examples(300), derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(spec=_maybe(_SPECS), status=_maybe(st.fixed_dictionaries({}, optional={"readyReplicas": _ANY, "conditions": _ANY})))
def test_generated_leader_worker_sets_are_parsed_or_refused_with_a_field_path(spec: Any, status: Any) -> None:
    manifest = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                "metadata": {"name": "serve", "namespace": "team"}, "spec": spec, "status": status}
    try:
        parse_object(manifest)
    except ValidationError as exc:
        assert exc.errors and "\n" not in str(exc)
        for err in exc.errors:
            assert err.path.split(".")[0].split("[")[0] in ("spec", "status", "metadata"), err
