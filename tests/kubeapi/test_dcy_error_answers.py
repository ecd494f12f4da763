"""The API server's errors are Status answers with or without extra routes: around the catch-all
handler itself when there are none (no middleware for aiohttp to wrap per request)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from hub.kubeapi import KubeAPI
from hub.service.apply import Applier
from hub.store import SQLiteStore


async def _get(api: KubeAPI, path: str) -> tuple[int, Any]:
    async with TestClient(TestServer(api.app())) as client:
        response = await client.get(path)
        return response.status, json.loads(await response.text())


@pytest.mark.parametrize("extra", [False, True])
def test_an_unexpected_failure_is_a_500_status(tmp_path: Any, monkeypatch: pytest.MonkeyPatch, extra: bool) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    try:
        api = KubeAPI(store, Applier(store).admit)
        if extra:
            api.extra_routes.append(_register_broken)
        else:
            assert not api.app().middlewares  # nothing wrapped per request
        status, body = asyncio.run(_get(api, "/api/v1/namespaces/nope"))
        assert status == 404 and body["reason"] == "NotFound"
        monkeypatch.setattr(api, "_fixed", _broken_fixed)
        status, body = asyncio.run(_get(api, "/version"))
        assert status == 500 and body["reason"] == "InternalError" and body["message"] == "Internal error occurred: boom"
        if extra:
            status, body = asyncio.run(_get(api, "/extra"))
            assert status == 500 and body["message"] == "Internal error occurred: boom"
    finally:
        store.close()


async def _broken(request: web.Request) -> web.Response:
    raise RuntimeError("boom")


def _register_broken(app: web.Application) -> None:
    app.router.add_get("/extra", _broken)


def _broken_fixed(*args: Any) -> Any:
    raise RuntimeError("boom")
