"""apps/v1 Deployment, ReplicaSet, StatefulSet and batch/v1 CronJob as mkhub apply reads them
(hub.api.apps_kind): Kueue's samples accepted; bad input refused in one line naming object, field and
reason; Kueue's webhook rules for a managed StatefulSet's replicas on update."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from hub.api.errors import ValidationError
from hub.api.jobkinds.serving import default
from hub.api.registry import parse_object, resolve_kind, validate_update

EXAMPLES = Path(__file__).resolve().parents[2] / "e2e" / "kueue-examples"


def sample(name: str) -> dict[str, Any]:
    return yaml.safe_load((EXAMPLES / name).read_text())  # type: ignore[no-any-return]


def refused(manifest: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as info:
        parse_object(copy.deepcopy(manifest), default_namespace="default")
    message = str(info.value)
    assert "\n" not in message
    return message


def test_kueues_samples_are_read_and_short_names_resolve() -> None:
    for name, kind in (("sample-deployment.yaml", "Deployment"), ("sample-statefulset.yaml", "StatefulSet"),
                       ("sample-cronjob.yaml", "CronJob")):
        assert parse_object(sample(name), default_namespace="default").kind == kind
    assert [resolve_kind(n).kind for n in ("deploy", "rs", "sts", "cj")] == [  # type: ignore[union-attr]
        "Deployment", "ReplicaSet", "StatefulSet", "CronJob"]


def test_bad_apps_objects_are_refused_naming_the_field() -> None:
    deploy = sample("sample-deployment.yaml")
    deploy["spec"]["replicas"] = -1
    assert 'Deployment "default/nginx-deployment" is invalid: spec.replicas' in refused(deploy)
    deploy = sample("sample-deployment.yaml")
    deploy["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    assert "`selector` does not match template `labels`" in refused(deploy)
    del deploy["spec"]["selector"]
    assert "spec.selector: Required value" in refused(deploy)
    sts = sample("sample-statefulset.yaml")
    sts["spec"]["template"]["spec"]["containers"] = []
    assert "spec.template.spec.containers: Required value" in refused(sts)
    sts = sample("sample-statefulset.yaml")
    sts["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "Not_A_Name"
    assert "kueue.x-k8s.io/queue-name" in refused(sts)  # Kueue's webhook: a DNS subdomain


def test_bad_cronjobs_are_refused_naming_the_field() -> None:
    cj = sample("sample-cronjob.yaml")
    cj["spec"]["schedule"] = "every minute"
    assert 'CronJob "default/sample-cronjob" is invalid: spec.schedule' in refused(cj)
    cj = sample("sample-cronjob.yaml")
    cj["spec"]["timeZone"] = "Mars/Olympus"
    assert "spec.timeZone" in refused(cj) and "unknown time zone" in refused(cj)
    del cj["spec"]["jobTemplate"]
    assert "spec.jobTemplate.spec: Required value" in refused(cj)


def test_a_managed_statefulsets_replicas_only_go_to_zero_and_back() -> None:
    marked = default("statefulset", sample("sample-statefulset.yaml"))
    old = parse_object(copy.deepcopy(marked), default_namespace="default")
    two = copy.deepcopy(marked)
    two["spec"]["replicas"] = 2
    with pytest.raises(ValidationError, match="spec.replicas"):
        validate_update(old, parse_object(two, default_namespace="default"))
    zero = copy.deepcopy(marked)
    zero["spec"]["replicas"] = 0
    validate_update(old, parse_object(zero, default_namespace="default"))
    unmarked = parse_object(sample("sample-statefulset.yaml"), default_namespace="default")
    plain_two = sample("sample-statefulset.yaml")
    plain_two["spec"]["replicas"] = 2
    validate_update(unmarked, parse_object(plain_two, default_namespace="default"))  # not Kueue's: any replicas
