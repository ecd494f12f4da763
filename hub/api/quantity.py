"""Kubernetes resource quantities as exact integers.

Kueue does all quota math on ``int64``: ``cpu`` in milli-units and every other
resource in base units, both rounded up (``Quantity.MilliValue`` / ``Value``).
We parse the decimal text exactly with :class:`fractions.Fraction` so that
``0.1`` and ``100m`` are the same number and nothing is lost to floats.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

__all__ = [
    "QuantityError",
    "parse_quantity",
    "quantity_value",
    "resource_value",
    "format_quantity",
    "MILLI_RESOURCES",
]

# Resources Kueue measures in milli-units (resources.ResourceValue uses MilliValue for cpu only).
MILLI_RESOURCES = frozenset({"cpu"})

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QUANTITY = re.compile(
    r"^(?P<sign>[+-]?)(?P<num>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:(?P<exp>[eE][+-]?[0-9]+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?))$"
)


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity."""


# Kueue counts every quantity as an int64 (milli-units for cpu): a value past that cannot be
# counted or compared, and a workload requesting it would wait forever, so it is refused.
INT64_MAX = 2**63 - 1
# Bounds that keep parsing cheap on hostile text (10**10**9 would never finish); every value
# beyond them is outside int64 anyway, or below the nano-unit Kubernetes rounds to.
_MAX_EXPONENT = 64
_MAX_DIGITS = 64


def parse_quantity(text: str | int | float) -> Fraction:
    """Parse ``500m``, ``1.5``, ``36Gi``, ``1e3``, ``100M`` into an exact number."""
    if isinstance(text, bool):
        raise QuantityError(f"quantities must be strings or numbers, not {text!r}")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise QuantityError(f"{text!r} is not a finite quantity")
        return Fraction(repr(text))
    if not isinstance(text, str):
        raise QuantityError(f"quantities must be strings or numbers, not {type(text).__name__}")
    match = _QUANTITY.match(text.strip())
    if match is None or text.strip() != text or text == "":
        raise QuantityError(
            f"{text!r} is not a quantity: expected a number with an optional suffix "
            "(n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei) or exponent (e.g. 500m, 1.5, 36Gi, 1e3)"
        )
    whole, _, fraction = match.group("num").partition(".")
    digits = (whole + fraction.rstrip("0")).lstrip("0")
    if len(digits) > _MAX_DIGITS:
        raise QuantityError(f"{text!r} has too many digits: at most {_MAX_DIGITS} significant digits")
    value = Fraction(match.group("num"))
    if match.group("exp"):
        exponent = int(match.group("exp")[1:])
        if value == 0:
            return value
        if exponent > _MAX_EXPONENT:
            raise QuantityError(_too_large(text))
        if exponent < -(_MAX_EXPONENT + _MAX_DIGITS):
            # Below a nano-unit whatever the digits: Kubernetes rounds it up to 1n.
            tiny = Fraction(1, 10**9)
            return -tiny if match.group("sign") == "-" else tiny
        value *= Fraction(10) ** exponent
    else:
        suffix = match.group("suffix") or ""
        value *= _BINARY[suffix] if suffix in _BINARY else _DECIMAL[suffix]
    return -value if match.group("sign") == "-" else value


def _too_large(text: object) -> str:
    return (f"{text!r} is too large: a quantity must fit in a 64-bit integer "
            f"(at most {INT64_MAX} units; for cpu, {INT64_MAX} millicores)")


def quantity_value(value: Fraction, milli: bool) -> int:
    """Round up to an integer count of base units (or milli-units), as Kubernetes does."""
    scaled = value * 1000 if milli else value
    return math.ceil(scaled)


def resource_value(resource: str, text: str | int | float) -> int:
    """The integer Kueue computes for a quantity of ``resource``; refused beyond int64."""
    # Text is cached: a restore reads the same few quantities thousands of times (errors are not cached).
    return _text_value(resource, text) if type(text) is str else _resource_value(resource, text)


@lru_cache(maxsize=4096)
def _text_value(resource: str, text: str) -> int:
    return _resource_value(resource, text)


def _resource_value(resource: str, text: str | int | float) -> int:
    out = quantity_value(parse_quantity(text), resource in MILLI_RESOURCES)
    if abs(out) > INT64_MAX:
        raise QuantityError(_too_large(text))
    return out


def format_quantity(resource: str, value: int) -> str:
    """Canonical short text for an integer from :func:`resource_value`.

    cpu prints as cores when whole (``3``) else milli (``1500m``); other resources
    use the largest exact binary suffix for values of at least 1Ki (``600Mi``),
    else the largest exact decimal suffix (``5``, ``2k``).
    """
    if resource in MILLI_RESOURCES:
        if value % 1000 == 0:
            return str(value // 1000)
        return f"{value}m"
    if value == 0:
        return "0"
    magnitude = abs(value)
    for suffix, factor in reversed(list(_BINARY.items())):
        if magnitude >= factor and magnitude % factor == 0:
            return f"{value // factor}{suffix}"
    for suffix in ("E", "P", "T", "G", "M", "k"):
        factor = int(_DECIMAL[suffix])
        if magnitude >= factor and magnitude % factor == 0:
            return f"{value // factor}{suffix}"
    return str(value)
