"""Decoding the API server's JSON once, with orjson (a compiled parser, several times faster than
``json``): every list page, watch line and write response passes through here.

orjson reads an integer beyond 64 bits as a float where ``json`` keeps it exact; a body with a run
of 19 or more digits anywhere (rare: quantities are strings) goes to ``json`` instead, as do
the texts orjson refuses (``NaN``, invalid JSON), so the result and the errors are ``json``'s.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_LONG_RUN = b"0" * 19


def loads(raw: bytes) -> Any:
    """``json.loads(raw)``, through orjson where that gives the same value."""
    if raw.translate(_DIGITS).find(_LONG_RUN) < 0:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    return json.loads(raw)


_RV = b'"resourceVersion":"'


def sole_version(raw: bytes, start: int = 0) -> str | None:
    """The value of the one ``"resourceVersion"`` key in compact JSON text (from ``start``), read
    from its bytes; None when there is none, more than one (an object that nests one: whose is
    it?) or it is not all digits. A quote inside a JSON string is escaped, so each occurrence of
    the key's bytes is a key."""
    at = raw.find(_RV, start)
    if at < 0:
        return None
    begin = at + len(_RV)
    end = raw.find(b'"', begin)
    if end < 0 or raw.find(_RV, end) >= 0:
        return None
    digits = raw[begin:end]
    return digits.decode() if digits.isdigit() else None
