from __future__ import annotations

import pytest

from hub.store import LabelSelector, LabelSelectorError, Requirement, parse_label_selector, selector_matches

LABELS = {"app": "web", "tier": "gpu", "rank": "5"}


def test_equals() -> None:
    assert selector_matches("app=web", LABELS)
    assert selector_matches("app==web", LABELS)
    assert not selector_matches("app=db", LABELS)
    assert not selector_matches("missing=web", LABELS)


def test_not_equals_matches_absent_label() -> None:
    assert selector_matches("app!=db", LABELS)
    assert not selector_matches("app!=web", LABELS)
    assert selector_matches("missing!=x", LABELS)


def test_in() -> None:
    assert selector_matches("tier in (cpu, gpu)", LABELS)
    assert not selector_matches("tier in (cpu,tpu)", LABELS)
    assert not selector_matches("missing in (x)", LABELS)


def test_notin_matches_absent_label() -> None:
    assert selector_matches("tier notin (cpu)", LABELS)
    assert not selector_matches("tier notin (cpu,gpu)", LABELS)
    assert selector_matches("missing notin (x)", LABELS)


def test_exists() -> None:
    assert selector_matches("app", LABELS)
    assert not selector_matches("missing", LABELS)


def test_does_not_exist() -> None:
    assert selector_matches("!missing", LABELS)
    assert not selector_matches("!app", LABELS)


def test_gt_lt() -> None:
    assert selector_matches("rank>4", LABELS)
    assert not selector_matches("rank>5", LABELS)
    assert selector_matches("rank<6", LABELS)
    assert not selector_matches("app<6", LABELS)  # not an integer: no match
    assert not selector_matches("missing>1", LABELS)


def test_conjunction_and_whitespace() -> None:
    sel = " app = web , tier in (gpu) ,!missing,rank "
    assert selector_matches(sel, LABELS)
    assert not selector_matches(sel + ",app!=web", LABELS)


def test_empty_selects_everything() -> None:
    assert selector_matches("", LABELS)
    assert selector_matches(None, None)
    assert selector_matches({}, {})
    assert parse_label_selector("   ") == LabelSelector()


def test_empty_value() -> None:
    assert selector_matches("app=", {"app": ""})
    assert not selector_matches("app=", {"app": "web"})


def test_dict_match_labels() -> None:
    assert selector_matches({"matchLabels": {"app": "web", "tier": "gpu"}}, LABELS)
    assert not selector_matches({"matchLabels": {"app": "db"}}, LABELS)


@pytest.mark.parametrize(
    ("operator", "values", "expected"),
    [
        ("In", ["gpu", "cpu"], True),
        ("In", ["cpu"], False),
        ("NotIn", ["cpu"], True),
        ("NotIn", ["gpu"], False),
        ("Exists", [], True),
        ("DoesNotExist", [], False),
    ],
)
def test_dict_match_expressions(operator: str, values: list[str], expected: bool) -> None:
    sel = {"matchExpressions": [{"key": "tier", "operator": operator, "values": values}]}
    assert selector_matches(sel, LABELS) is expected


def test_dict_forms_are_anded() -> None:
    sel = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gpu"]}],
    }
    assert not selector_matches(sel, LABELS)


def test_parsed_form_and_round_trip() -> None:
    sel = parse_label_selector("b in (y,x),a=1,!c,d,e notin (z),f!=2,g>3")
    assert sel.requirements[0] == Requirement("b", "In", ("x", "y"))
    assert str(sel) == "b in (x,y),a=1,!c,d,e!=z,f!=2,g>3"
    assert parse_label_selector(str(sel)) == sel
    assert parse_label_selector(sel) is sel
    dict_form = parse_label_selector({"matchLabels": {"a": "1"}})
    assert dict_form == parse_label_selector("a=1")


def test_prefixed_keys() -> None:
    assert selector_matches("kueue.x-k8s.io/queue-name=main", {"kueue.x-k8s.io/queue-name": "main"})


@pytest.mark.parametrize(
    "bad",
    [
        "a=b,",
        ",a",
        "a in x",
        "a in ()",
        "a in (x",
        "a=b=c",
        "a b",
        "!",
        "!a=b",
        "a>x",
        "a=" + "v" * 64,
        "-a=b",
        "a=(",
    ],
)
def test_invalid_strings(bad: str) -> None:
    with pytest.raises(LabelSelectorError):
        parse_label_selector(bad)


@pytest.mark.parametrize(
    "bad",
    [
        {"matchLabels": ["a"]},
        {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
        {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
        {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
        {"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["1"]}]},
        {"matchExpressions": ["a"]},
        {"matchLabel": {"a": "b"}},
    ],
)
def test_invalid_dicts(bad: dict[str, object]) -> None:
    with pytest.raises(LabelSelectorError):
        parse_label_selector(bad)


def test_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="a in x"):
        parse_label_selector("a in x")
