"""Kubernetes quantities as Kueue's integers: cpu in milli-units, everything else in base units, rounded up."""

from __future__ import annotations

from fractions import Fraction

import pytest

from hub.api.quantity import QuantityError, format_quantity, parse_quantity, resource_value


@pytest.mark.parametrize(
    ("text", "exact"),
    [
        ("500m", Fraction(1, 2)),
        ("1.5", Fraction(3, 2)),
        ("36Gi", 36 * 2**30),
        ("1e3", 1000),
        ("1E3", 1000),
        ("100M", 100_000_000),
        ("2k", 2000),
        ("1Ki", 1024),
        ("3Mi", 3 * 2**20),
        ("2E", 2 * 10**18),
        ("250u", Fraction(250, 10**6)),
        ("7n", Fraction(7, 10**9)),
        (".5", Fraction(1, 2)),
        ("+4", 4),
        ("-2", -2),
        (3, 3),
        (0.25, Fraction(1, 4)),
    ],
)
def test_parse_quantity_is_exact(text: str | int | float, exact: Fraction | int) -> None:
    assert parse_quantity(text) == exact


def test_decimal_and_milli_spellings_are_the_same_number() -> None:
    assert parse_quantity("0.1") == parse_quantity("100m")
    assert resource_value("cpu", "0.1") == resource_value("cpu", "100m") == 100


@pytest.mark.parametrize(
    ("resource", "text", "value"),
    [
        ("cpu", "500m", 500),
        ("cpu", "1.5", 1500),
        ("cpu", "2", 2000),
        ("cpu", "1e3", 1_000_000),
        ("memory", "36Gi", 36 * 2**30),
        ("memory", "100M", 100_000_000),
        ("nvidia.com/gpu", "4", 4),
        ("pods", "10", 10),
    ],
)
def test_resource_value_uses_milli_units_for_cpu_only(resource: str, text: str, value: int) -> None:
    assert resource_value(resource, text) == value


@pytest.mark.parametrize(
    ("resource", "text", "value"),
    [
        ("cpu", "0.0001", 1),  # a tenth of a milli-cpu is one milli-cpu
        ("cpu", "1n", 1),
        ("cpu", "1500000001n", 1501),
        ("memory", "1.5", 2),  # half a byte is a byte
        ("memory", "500m", 1),
        ("example.com/foo", "0.01", 1),
    ],
)
def test_fractions_round_up_like_quantity_value(resource: str, text: str, value: int) -> None:
    assert resource_value(resource, text) == value


@pytest.mark.parametrize("text", ["", "abc", "1.2.3", "10Q", "1K", "1ki", " 1", "1 Gi", "Gi", "1e", "--1", "1e3Gi"])
def test_malformed_quantities_are_rejected_with_a_hint(text: str) -> None:
    with pytest.raises(QuantityError) as exc:
        parse_quantity(text)
    message = str(exc.value)
    assert repr(text) in message
    assert "is not a quantity" in message
    assert "500m" in message  # the message shows what a quantity looks like


@pytest.mark.parametrize("value", [True, None, [1], {"a": 1}, float("inf"), float("nan")])
def test_non_numeric_values_are_rejected(value: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("resource", "value", "text"),
    [
        ("cpu", 3000, "3"),
        ("cpu", 1500, "1500m"),
        ("cpu", 0, "0"),
        ("memory", 600 * 2**20, "600Mi"),
        ("memory", 36 * 2**30, "36Gi"),
        ("memory", 5, "5"),
        ("memory", 2000, "2k"),
        ("memory", 0, "0"),
        ("nvidia.com/gpu", 8, "8"),
    ],
)
def test_format_quantity_is_canonical_and_short(resource: str, value: int, text: str) -> None:
    assert format_quantity(resource, value) == text


@pytest.mark.parametrize(
    ("resource", "value"),
    [("cpu", 1), ("cpu", 2500), ("cpu", 10**9), ("memory", 1023), ("memory", 3 * 2**40), ("memory", 10**15 + 1)],
)
def test_format_then_parse_round_trips(resource: str, value: int) -> None:
    assert resource_value(resource, format_quantity(resource, value)) == value


@pytest.mark.parametrize(
    ("resource", "text"),
    [("cpu", "1e400"), ("memory", "1e400"), ("cpu", "9223372036854776"), ("memory", "8Ei"), ("memory", "1e19"),
     ("memory", "9" * 5000), ("memory", "1e99999999999")],
)
def test_a_value_past_int64_is_refused_not_counted(resource: str, text: str) -> None:
    with pytest.raises(QuantityError, match="too large|too many digits"):
        resource_value(resource, text)


@pytest.mark.parametrize(
    ("resource", "text", "value"),
    [("memory", "9223372036854775807", 2**63 - 1), ("cpu", "9223372036854775", 9223372036854775000),
     ("memory", "0e99999999999", 0), ("cpu", "1e-400", 1), ("memory", "7Ei", 7 * 2**60),
     ("cpu", "1." + "0" * 100, 1000), ("memory", "0." + "0" * 100 + "1", 1)],
)
def test_values_at_the_edges_of_int64_are_kept(resource: str, text: str, value: int) -> None:
    assert resource_value(resource, text) == value
