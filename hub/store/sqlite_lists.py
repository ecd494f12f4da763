"""A whole list of one kind from the embedded store, narrowed in SQLite by its label selector.

Decoding every stored object to test its labels made a selected list cost what the whole kind
costs (the dev-cluster's Job controller lists a Job's pods by ``controller-uid`` on every
reconcile: quadratic in the pods of a namespace). An equality requirement's value must appear
in the stored JSON as a string (label values need no JSON escaping), so SQLite drops the bodies
without it before any is decoded; the selector is still applied exactly to what is left.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from hub.api import fastjson
from hub.api.selectors import LabelSelector
from hub.store.interface import ObjectList


@contextmanager
def snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """Run several SELECTs against one consistent snapshot."""
    if conn.in_transaction:  # the batch's own thread: already inside its transaction
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")


# What a label value may be (hub.api.selectors): none of these characters is escaped in JSON.
_PLAIN = re.compile(r"[A-Za-z0-9._-]+")


def _narrowing(selector: LabelSelector | None) -> tuple[str, list[str]]:
    """SQL conditions on the body that every object the selector matches meets."""
    sql = ""
    params: list[str] = []
    for req in selector.requirements if selector is not None else ():
        values = req.values
        if req.operator != "In" or not values or not all(_PLAIN.fullmatch(v) for v in values):
            continue
        sql += " AND (" + " OR ".join(["instr(body, ?) > 0"] * len(values)) + ")"
        params.extend(f'"{v}"' for v in values)
    return sql, params


def read_list(conn: sqlite3.Connection, kind: str, namespace: str | None, selector: LabelSelector | None) -> ObjectList:
    """The objects of ``kind`` (in ``namespace``, if given) the selector matches, in (namespace, name) order."""
    narrow, extra = _narrowing(selector)
    if namespace is None:
        sql, params = "SELECT body FROM objects WHERE kind = ?", [kind]
        order = " ORDER BY namespace, name"
    else:
        sql, params = "SELECT body FROM objects WHERE kind = ? AND namespace = ?", [kind, namespace]
        order = " ORDER BY name"
    rows = conn.execute(sql + narrow + order, (*params, *extra)).fetchall()
    objects: ObjectList = [fastjson.loads(body) for (body,) in rows]
    if selector is not None and selector.requirements:
        objects = [o for o in objects if selector.matches(o["metadata"].get("labels"))]
    return objects
