"""Lists and watches fail and answer where kube-apiserver does: resourceVersion and
resourceVersionMatch rules, consistent continue pages that expire, too large versions,
bookmarks at the global resourceVersion (the API concepts doc, "Resource versions";
kube-apiserver's cacher and etcd3 store)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from .conftest import Env, ServerThread, make_store

G = "kueue.x-k8s.io"
FLAVORS = f"/apis/{G}/v1beta1/resourceflavors"


def flavor(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": f"{G}/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": name, "labels": labels}}


def make(env: Env, *names: str) -> str:
    rv = ""
    for name in names:
        status, _, body = env.raw("POST", FLAVORS, flavor(name))
        assert status == 201, body
        rv = body["metadata"]["resourceVersion"]
    return rv


def names(body: dict[str, Any]) -> list[str]:
    return [o["metadata"]["name"] for o in body["items"]]


@pytest.mark.parametrize(
    ("query", "code", "message"),
    [
        ([("resourceVersionMatch", "NotOlderThan")], 422, "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"),
        ([("resourceVersion", "0"), ("resourceVersionMatch", "Exact")], 422, 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'),
        ([("resourceVersion", "1"), ("resourceVersionMatch", "Newest")], 422, 'Unsupported value: "Newest": supported values: "Exact", "NotOlderThan"'),
        ([("continue", "eyJydiI6MSwic3RhcnQiOiJ4In0"), ("resourceVersion", "5")], 400, "specifying resource version is not allowed when using continue"),
    ],
    ids=["match-without-version", "exact-zero", "unknown-match", "continue-with-version"],
)
def test_list_options_are_validated(env: Env, query: list[tuple[str, str]], code: int, message: str) -> None:
    status, _, body = env.raw("GET", FLAVORS, query=query)
    assert status == code and body["code"] == code
    assert message in body["message"]
    if code == 422:
        assert body["reason"] == "Invalid" and body["message"].startswith('ListOptions.meta.k8s.io "" is invalid: ')
        assert body["details"]["causes"][0]["field"] == "resourceVersionMatch"


def test_a_version_not_reached_yet_is_a_504_after_a_wait(env: Env) -> None:
    rv = int(make(env, "a"))
    status, _, body = env.raw("GET", FLAVORS, query=[("resourceVersion", str(rv)), ("resourceVersionMatch", "NotOlderThan")])
    assert status == 200 and names(body) == ["a"]  # reached: the current state
    status, _, body = env.raw("GET", FLAVORS, query=[("resourceVersion", str(rv + 100)), ("resourceVersionMatch", "NotOlderThan")])
    assert status == 504
    assert (body["reason"], body["message"]) == ("Timeout", f"Too large resource version: {rv + 100}, current: {rv}")
    assert body["details"]["causes"] == [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]
    assert body["details"]["retryAfterSeconds"] == 1
    # A watch from there: the same Status as its one ERROR event, not a 410.
    status, _, text = env.raw("GET", FLAVORS, query=[("watch", "1"), ("resourceVersion", str(rv + 100)), ("timeoutSeconds", "5")])
    events = [json.loads(line) for line in text.splitlines()] if isinstance(text, str) else [text]
    assert status == 200 and [e["type"] for e in events] == ["ERROR"]
    assert events[0]["object"]["code"] == 504 and events[0]["object"]["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"


def test_exact_lists_the_state_at_that_version(env: Env) -> None:
    rv = make(env, "a", "b")
    env.raw("PATCH", f"{FLAVORS}/a", {"metadata": {"labels": {"x": "1"}}}, content_type="application/merge-patch+json")
    env.raw("DELETE", f"{FLAVORS}/b")
    make(env, "c")
    status, _, body = env.raw("GET", FLAVORS, query=[("resourceVersion", rv), ("resourceVersionMatch", "Exact")])
    assert status == 200, body
    assert names(body) == ["a", "b"] and body["metadata"]["resourceVersion"] == rv
    assert not body["items"][0]["metadata"].get("labels")
    # A limit without a match is Exact too (served from etcd), as the API concepts table says.
    status, _, body = env.raw("GET", FLAVORS, query=[("resourceVersion", rv), ("limit", "10")])
    assert status == 200 and names(body) == ["a", "b"]


def test_resource_version_zero_ignores_the_limit(env: Env) -> None:
    make(env, "a", "b", "c")
    status, _, body = env.raw("GET", FLAVORS, query=[("resourceVersion", "0"), ("limit", "1")])
    assert status == 200 and names(body) == ["a", "b", "c"] and not body["metadata"].get("continue")


def test_continue_pages_show_the_first_pages_state(env: Env) -> None:
    make(env, "a", "b", "c")
    status, _, first = env.raw("GET", FLAVORS, query=[("limit", "1")])
    assert status == 200 and names(first) == ["a"]
    env.raw("DELETE", f"{FLAVORS}/b")
    make(env, "bb")
    env.raw("PATCH", f"{FLAVORS}/c", {"metadata": {"labels": {"x": "1"}}}, content_type="application/merge-patch+json")
    status, _, rest = env.raw("GET", FLAVORS, query=[("limit", "5"), ("continue", first["metadata"]["continue"])])
    assert status == 200, rest
    assert names(rest) == ["b", "c"] and not rest["items"][1]["metadata"].get("labels")
    assert rest["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


@pytest.fixture
def small_window(tmp_path: Path) -> Iterator[Env]:
    store = make_store(tmp_path / "small.db", log_retention=4, watch_cache=4)
    server = ServerThread(store, bookmark_interval=0.3)
    config = kubernetes.client.Configuration()
    config.host = server.url
    client = kubernetes.client.ApiClient(config)
    try:
        yield Env(store, server, client)
    finally:
        client.close()
        server.close()
        store.close()


def test_a_continue_token_past_the_window_is_410_with_a_fresh_token(small_window: Env) -> None:
    env = small_window
    make(env, "a", "b", "c")
    status, _, first = env.raw("GET", FLAVORS, query=[("limit", "1")])
    assert status == 200 and names(first) == ["a"]
    env.raw("PATCH", f"{FLAVORS}/b", {"metadata": {"labels": {"x": "1"}}}, content_type="application/merge-patch+json")
    make(env, *[f"z{i}" for i in range(12)])  # the first page's version leaves the window
    status, _, gone = env.raw("GET", FLAVORS, query=[("limit", "1"), ("continue", first["metadata"]["continue"])])
    assert status == 410 and gone["reason"] == "Expired"
    assert gone["message"].startswith("The provided continue parameter is too old to display a consistent list result.")
    fresh = gone["metadata"]["continue"]
    # The fresh token continues after "a" at the latest state (inconsistent, as it says).
    status, _, rest = env.raw("GET", FLAVORS, query=[("limit", "50"), ("continue", fresh)])
    assert status == 200 and names(rest) == ["b", "c", *sorted(f"z{i}" for i in range(12))]
    assert rest["items"][0]["metadata"]["labels"] == {"x": "1"}
    # Exact at a version past the window: 410, as etcd after compaction.
    status, _, body = env.raw("GET", FLAVORS, query=[("resourceVersion", first["metadata"]["resourceVersion"]), ("resourceVersionMatch", "Exact")])
    assert status == 410 and body["message"] == "The resourceVersion for the provided list is too old."


def test_bookmarks_carry_the_global_resource_version(small_window: Env) -> None:
    # An idle kind's watch must follow the store's version, or a resume after the window
    # moved on (by changes of other kinds) would be 410 for no change of its own.
    env = small_window
    rv = make(env, "a")
    for i in range(3):
        status, _, body = env.raw("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"ns{i}"}})
        assert status == 201
    latest = body["metadata"]["resourceVersion"]
    status, _, text = env.raw("GET", FLAVORS, query=[("watch", "1"), ("resourceVersion", rv), ("allowWatchBookmarks", "true"), ("timeoutSeconds", "2")])
    events = [json.loads(line) for line in text.splitlines()]
    bookmarks = [e["object"]["metadata"]["resourceVersion"] for e in events if e["type"] == "BOOKMARK"]
    assert bookmarks and bookmarks[-1] == latest and int(latest) > int(rv)
