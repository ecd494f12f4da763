"""A Job update that leaves the pod template as it was (suspend, parallelism, labels: most of the
writes Kueue and the hub make) is checked without copying or normalizing the template."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from hub.kubeapi import jobrules

from .test_jobrules import job


def _refuse(*args: Any) -> Any:
    raise AssertionError("the unchanged template was copied or normalized")


@pytest.mark.parametrize("suspend", [True, False])
def test_an_unchanged_template_is_not_copied_or_normalized(monkeypatch: pytest.MonkeyPatch, suspend: bool) -> None:
    stored = job(suspend=suspend)
    new = copy.deepcopy(stored)
    new["spec"]["suspend"] = not suspend
    new["spec"]["parallelism"] = 3
    monkeypatch.setattr(jobrules, "_with_directives_of", _refuse)
    monkeypatch.setattr(jobrules, "_normal", _refuse)
    assert jobrules.update_errors(stored, new) == []


def test_a_changed_template_is_still_refused_while_running() -> None:
    stored = job(suspend=False)
    new = copy.deepcopy(stored)
    new["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "a"}
    assert [e.path for e in jobrules.update_errors(stored, new)] == ["spec.template"]
