"""The JSON the dev-cluster's API server writes: compact UTF-8 as Go's encoder writes it (text
outside ASCII as itself, not as \\u escapes), in answers, lists and watch events alike."""

from __future__ import annotations

import json

from hub.kubeapi.bodies import encode_json

from .conftest import Env

MAPS = "/api/v1/namespaces/default/configmaps"
TEXT = "héllo ✓ 日本"


def _get(env: Env, path: str) -> bytes:
    response = env.client.rest_client.pool_manager.request("GET", env.url + path, headers={"Accept": "application/json"})
    assert response.status == 200, response.data
    data: bytes = response.data
    return data


def test_answers_lists_and_watch_events_are_utf8(env: Env) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "greeting"}, "data": {"text": TEXT}}
    created = env.client.rest_client.pool_manager.request(
        "POST", env.url + MAPS, body=json.dumps(body), headers={"Content-Type": "application/json"})
    assert created.status == 201 and TEXT.encode() in created.data
    for path in (f"{MAPS}/greeting", MAPS, f"{MAPS}?watch=1&timeoutSeconds=1"):
        raw = _get(env, path)
        assert TEXT.encode() in raw and b"\\u" not in raw, path
    event = json.loads(_get(env, f"{MAPS}?watch=1&timeoutSeconds=1").splitlines()[0])
    assert event["type"] == "ADDED" and event["object"]["data"]["text"] == TEXT


def test_a_value_orjson_refuses_is_written_as_the_standard_library_writes_it() -> None:
    assert encode_json({"a": float("nan"), "b": "é"}) == b'{"a":NaN,"b":"\\u00e9"}'
    assert encode_json({"a": 1, "b": "é"}) == '{"a":1,"b":"é"}'.encode()
