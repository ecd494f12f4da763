"""JSON text in and out for the hot paths, through orjson when it is installed.

Every function gives exactly what the standard library's ``json`` gives with the
options named (compact separators, ``ensure_ascii=False``, ``allow_nan=False``):
orjson (a compiled parser and encoder, several times faster) runs first, and
whatever it treats differently goes to ``json`` instead:

- decoding: integers beyond 64 bits (orjson reads them as floats), ``NaN`` and
  ``Infinity`` literals, invalid text (so errors are ``json``'s own);
- encoding: NaN and infinities (orjson writes ``null``: where its output has a ``null``,
  a walk of the value looks for a float that is not finite, and such a value goes to
  ``json``, which raises or writes the same text), integers
  beyond 64 bits, keys that are not strings (``json`` converts them), lone
  surrogates, and every type that is not plain JSON (subclasses, dataclasses,
  datetimes: ``json`` raises, or encodes str/int subclasses as their values).

Floats are written in the shortest form that reads back to the same value, by
both; the exponent's spelling may differ (``1e+16`` / ``1e16``), never the value.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a dependency; the standard library still works
    _orjson = None  # type: ignore[assignment]

_DIGITS = bytes(0x30 if 0x30 <= c <= 0x39 else 0x20 for c in range(256))  # each digit "0", the rest " "
_LONG_RUN = b"0" * 19  # 64-bit integers have at most 19 digits; orjson reads longer ones as floats
_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
_COMPACT_SORTED = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False, sort_keys=True)

if _orjson is not None:
    _OPTIONS = _orjson.OPT_PASSTHROUGH_DATACLASS | _orjson.OPT_PASSTHROUGH_DATETIME | _orjson.OPT_PASSTHROUGH_SUBCLASS
    _SORTED = _OPTIONS | _orjson.OPT_SORT_KEYS


UNDECODED = object()  # what loads_utf8 returns for text it leaves to the caller


def loads_utf8(raw: bytes) -> Any:
    """orjson's decoding of UTF-8 ``raw``, or :data:`UNDECODED` where it may differ from ``json.loads``
    (orjson missing, integers past 64 bits, NaN and Infinity, lone surrogates, invalid text)."""
    if _orjson is None or not raw or raw.translate(_DIGITS).find(_LONG_RUN) >= 0:
        return UNDECODED
    try:
        return _orjson.loads(raw)
    except _orjson.JSONDecodeError:
        return UNDECODED


def dumps_utf8(obj: Any) -> bytes | None:
    """orjson's compact UTF-8 of a value :func:`loads_utf8` returned (plain JSON types only, any
    ``null`` kept), or None without orjson or past its nesting limit (255 levels)."""
    if _orjson is None:
        return None
    try:
        return _orjson.dumps(obj)
    except TypeError:  # orjson.JSONEncodeError: nested too deep
        return None


def loads(text: str, parse_constant: Callable[[str], Any] | None = None) -> Any:
    """``json.loads(text, parse_constant=parse_constant)``."""
    if _orjson is not None:
        try:
            raw = text.encode()
        except UnicodeEncodeError:  # lone surrogates
            raw = b""
        # Every run of digits as "0"s: 19 in a row may be an integer orjson would read as a float.
        if raw and raw.translate(_DIGITS).find(_LONG_RUN) < 0:
            try:
                return _orjson.loads(raw)  # refuses NaN and Infinity: those go to json below
            except _orjson.JSONDecodeError:
                pass
    return json.loads(text, parse_constant=parse_constant)


def utf8_size(obj: Any) -> int | None:
    """The UTF-8 size of orjson's compact text of ``obj`` (``str()`` of what JSON cannot hold), or
    None when orjson is missing or refuses (lone surrogates, non-string keys, huge integers) or
    writes ``null`` (perhaps for a NaN). Where it answers, ``json``'s compact text of the same value
    differs only in the exponents of floats, at most two bytes in a token of at least four."""
    if _orjson is None:
        return None
    try:
        out = _orjson.dumps(obj, default=str, option=_OPTIONS)
    except TypeError:
        return None
    return None if b"null" in out and not _finite(obj) else len(out)


def _finite(value: Any) -> bool:
    """No NaN or infinity anywhere in ``value`` (orjson wrote it, so it nests at most 255 deep).
    Asked only when orjson's text has a ``null``: a Pod's ``lastProbeTime: null`` is no NaN."""
    kind = type(value)
    if kind is float:
        return math.isfinite(value)
    if kind is dict:
        return all(_finite(v) for v in value.values() if type(v) not in _NO_FLOAT)
    if kind is list or kind is tuple:
        return all(_finite(v) for v in value if type(v) not in _NO_FLOAT)
    return True  # a scalar, or what orjson wrote through default=str (subclasses pass through to it)


_NO_FLOAT = frozenset({str, int, bool, type(None)})


def _fast(obj: Any, option: int) -> str | None:
    try:
        out = _orjson.dumps(obj, option=option)
    except TypeError:  # orjson.JSONEncodeError: a type, key or integer orjson leaves to json
        return None
    if b"null" in out and not _finite(obj):  # a NaN or infinity, which orjson writes as null
        return None
    return out.decode()


def dumps(obj: Any) -> str:
    """``json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)``."""
    if _orjson is not None:
        out = _fast(obj, _OPTIONS)
        if out is not None:
            return out
    return _COMPACT.encode(obj)


def dumps_sorted(obj: Any) -> str:
    """As :func:`dumps`, with ``sort_keys=True``."""
    if _orjson is not None:
        out = _fast(obj, _SORTED)
        if out is not None:
            return out
    return _COMPACT_SORTED.encode(obj)


def copy(obj: Any) -> Any:
    """``loads(dumps(obj))``: a deep, JSON-normalized copy (tuples become lists)."""
    return loads(dumps(obj))
