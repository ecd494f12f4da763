"""A round's independent writes gathered on one event loop: the transport has every request of a
batch in flight at once (plain HTTP and TLS with a client certificate, as the official client's
pool would connect), and the store lands each write with its refusal in its place, a conflict
re-read and retried, and a create's dropped status written after it."""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s_client

from hub.federation.tls import make_certs
from hub.store.interface import AlreadyExists, NotFound, create_independent
from hub.store.kube.requests import Request
from hub.store.kube.transport import REQUEST_TIMEOUT, ApiClientTransport, Response, TransportError

from .conftest import ApiServer, Names, open_store, wait_for
from .harness import count_batches, serving
from .test_kube_store_http import cq

MEET = 4


class _Meeting(BaseHTTPRequestHandler):
    """Answers once ``MEET`` requests are open at the same time (one at a time never gets an
    answer: the barrier breaks), echoing what it got."""

    protocol_version = "HTTP/1.1"
    barrier: threading.Barrier

    def do_PATCH(self) -> None:  # noqa: N802 - http.server's naming
        self._answer()

    do_GET = do_PATCH

    def _answer(self) -> None:
        sent = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            self.barrier.wait()
            status = 200
        except threading.BrokenBarrierError:
            status = 500
        peer = self.connection.getpeercert() if isinstance(self.connection, ssl.SSLSocket) else None
        cn = dict(x[0] for x in peer["subject"])["commonName"] if peer else ""
        body = (
            b'{"method":"%s","path":"%s","type":"%s","auth":"%s","sent":%d,"peer":"%s"}'
            % (self.command.encode(), self.path.encode(), (self.headers.get("Content-Type") or "").encode(),
               (self.headers.get("Authorization") or "").encode(), len(sent), cn.encode())
        )
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _serve(tls: ssl.SSLContext | None = None) -> Iterator[str]:
    handler = type("Handler", (_Meeting,), {"barrier": threading.Barrier(MEET, timeout=10)})
    with serving(handler, tls) as url:
        yield url


@pytest.fixture
def server() -> Iterator[str]:
    yield from _serve()


@pytest.fixture
def certs(tmp_path: Path) -> Any:
    return make_certs(tmp_path / "certs", ["worker-1"])


@pytest.fixture
def tls_server(certs: Any) -> Iterator[str]:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(certs.ca_crt))
    ctx.load_cert_chain(str(certs.hub_crt), str(certs.hub_key))
    ctx.verify_mode = ssl.CERT_REQUIRED  # a client without a certificate signed by the CA is refused
    yield from _serve(ctx)


def _patch(i: int) -> Request:
    return Request("PATCH", f"/apis/x/v1/things/t{i}/status", (("fieldManager", "mkhub"),), b'{"a":%d}' % i,
                   "application/merge-patch+json")


def test_a_batch_of_requests_is_in_flight_at_once_with_headers_bodies_and_the_write_timeout(server: str) -> None:
    cfg = k8s_client.Configuration()
    cfg.host = server
    cfg.api_key = {"authorization": "Bearer sekrit"}
    transport = ApiClientTransport(cfg)
    try:
        out = transport.send_many([_patch(i) for i in range(MEET)], timeout=REQUEST_TIMEOUT / 2)
    finally:
        transport.close()
    assert all(isinstance(r, Response) and r.status == 200 for r in out), out
    answers = [r.json() for r in out if isinstance(r, Response)]
    assert [a["path"] for a in answers] == [
        f"/apis/x/v1/things/t{i}/status?fieldManager=mkhub&timeout=15000ms" for i in range(MEET)
    ]  # each answer in its request's place; a write bounded below the default tells the server
    assert {(a["type"], a["auth"], a["sent"]) for a in answers} == {("application/merge-patch+json", "Bearer sekrit", 7)}


def test_over_tls_the_batch_presents_the_client_certificate_and_checks_the_server(certs: Any, tls_server: str) -> None:
    cfg = k8s_client.Configuration()
    cfg.host = tls_server
    cfg.ssl_ca_cert = str(certs.ca_crt)
    cfg.cert_file, cfg.key_file = (str(p) for p in certs.agents["worker-1"])
    transport = ApiClientTransport(cfg)
    try:
        out = transport.send_many([_patch(i) for i in range(MEET)])
    finally:
        transport.close()
    assert [r.json()["peer"] if isinstance(r, Response) else r for r in out] == ["worker-1"] * MEET

    untrusted = k8s_client.Configuration()  # the system's CAs only: the server's certificate is not trusted
    untrusted.host = tls_server
    transport = ApiClientTransport(untrusted)
    try:
        refused = transport.send_many([_patch(0)])
    finally:
        transport.close()
    assert len(refused) == 1 and isinstance(refused[0], TransportError)
    assert "certificate" in str(refused[0]).lower()


def test_the_store_lands_each_write_of_a_batch_with_refusals_in_place(api: ApiServer, names: Names) -> None:
    with open_store(api.kubeconfig) as mine, open_store(api.kubeconfig) as theirs:
        a, b, c = (names.name(x) for x in "abc")
        mine.create(cq(a))
        mine.create(cq(b))
        wait_for(lambda: theirs.get("ClusterQueue", "", b) is not None, what="the other store to see the queue")
        mine.informers["ClusterQueue"].stop()  # my cache cannot learn of their write: a 409 follows
        theirs.update_status({**cq(b), "status": {"pendingWorkloads": 7}})
        out = mine.write_concurrently([
            (False, {**cq(a), "status": {"pendingWorkloads": 1}}),
            (False, {**cq(b), "status": {"pendingWorkloads": 2}}),  # conflicts: re-read and retried
            (False, {**cq(names.name("gone")), "status": {"pendingWorkloads": 3}}),
            (True, cq(a)),
            (True, {**cq(c), "status": {"pendingWorkloads": 4}}),  # the server drops it: written after
        ])
        assert isinstance(out[2], NotFound) and isinstance(out[3], AlreadyExists)
        assert mine.retries == 1
        for i, name, pending in ((0, a, 1), (1, b, 2), (4, c, 4)):
            got = out[i]
            assert isinstance(got, dict) and got["status"] == {"pendingWorkloads": pending}
            stored = mine.get("ClusterQueue", "", name)
            assert stored is not None and stored["status"] == {"pendingWorkloads": pending}
            assert got["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]  # the store's own
        assert "managedFields" not in out[0]["metadata"]  # type: ignore[index]  # brief: decoded once


def test_events_created_independently_go_out_in_one_batch(api: ApiServer, names: Names, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_store(api.kubeconfig) as store:
        batches = count_batches(store, monkeypatch)
        events = [
            {"apiVersion": "v1", "kind": "Event", "metadata": {"namespace": names.namespace, "name": names.name(f"e{i}")},
             "involvedObject": {"kind": "Workload", "name": "w", "namespace": names.namespace}, "reason": "R",
             "message": "m", "type": "Normal", "count": 1}
            for i in range(3)
        ]
        out = create_independent(store, [*events, events[0]])
        assert batches == [4]
        # The two creates of e0 are in flight at once: the server takes either first.
        assert sorted(isinstance(o, AlreadyExists) for o in (out[0], out[3])) == [False, True]
        if isinstance(out[0], AlreadyExists):
            out = [out[3], *out[1:3]]
        assert [o["metadata"]["name"] for o in out[:3] if isinstance(o, dict)] == [e["metadata"]["name"] for e in events]
        for o in out[:3]:
            assert isinstance(o, dict)
            # Written, not kept: the server holds it (and expires it); the cache and the answer name no version of it.
            assert "resourceVersion" not in o["metadata"] and "managedFields" not in o["metadata"]
            assert store.get("Event", names.namespace, o["metadata"]["name"]) is None
            path = f"/api/v1/namespaces/{names.namespace}/events/{o['metadata']['name']}"
            on_server = store.transport.send(Request("GET", path))
            assert on_server.status == 200 and on_server.json()["metadata"]["uid"] == o["metadata"]["uid"]


def test_a_reused_handle_carries_nothing_of_its_previous_request_over(server: str) -> None:
    """Handles are kept between batches: a GET after a PATCH sends no body and no PATCH verb."""
    cfg = k8s_client.Configuration()
    cfg.host = server
    transport = ApiClientTransport(cfg)
    try:
        first = transport.send_many([_patch(i) for i in range(MEET)])
        get = Request("GET", "/apis/x/v1/things/t0")
        second = transport.send_many([get] * MEET)
    finally:
        transport.close()
    assert all(isinstance(r, Response) and r.status == 200 for r in [*first, *second])
    assert [r.json()["method"] for r in second if isinstance(r, Response)] == ["GET"] * MEET
    assert {r.json()["sent"] for r in second if isinstance(r, Response)} == {0}


def test_what_the_gatherer_cannot_mirror_is_sent_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from hub.store.kube import gathered

    def cfg(**settings: Any) -> k8s_client.Configuration:
        out = k8s_client.Configuration()
        out.host = "https://127.0.0.1:6443"
        for name, value in settings.items():
            setattr(out, name, value)
        return out

    assert gathered.usable(cfg()) and gathered.usable(cfg(assert_hostname=False))
    for settings in ({"proxy": "http://proxy:3128"}, {"assert_hostname": "api.internal"},
                     {"tls_server_name": "api.internal"}, {"ca_cert_data": "PEM"}):
        assert not gathered.usable(cfg(**settings)), settings
    monkeypatch.setattr(gathered, "pycurl", None)  # no wheel for this platform
    assert not gathered.usable(cfg())


def test_a_store_that_may_not_write_refuses_a_batch_but_not_an_empty_one(api: ApiServer, names: Names) -> None:
    """A standby hub's rounds write nothing: that must not count as a write refused for lack of the lease."""
    from hub.store.kube import KubeStore, KubeStoreOptions, NotLeader
    from hub.store.kube.transport import ApiClientTransport as Transport

    from .harness import FAST_INFORMER

    with KubeStore(Transport.from_kubeconfig(api.kubeconfig), KubeStoreOptions(informer=FAST_INFORMER),
                   fence=lambda: False) as standby:
        assert standby.write_concurrently([]) == []
        assert create_independent(standby, []) == []
        with pytest.raises(NotLeader):
            standby.write_concurrently([(True, cq(names.name("x")))])


class _Slow(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        time.sleep(0.2)
        self.send_response(201)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        pass


def test_a_batch_longer_than_the_connect_timeout_waits_for_connections_without_timing_out() -> None:
    """Requests queued behind a long batch are handed to libcurl only when a connection is free:
    its connect timeout, counted from the hand-over, never runs out while they wait."""
    from hub.store.kube import gathered

    with serving(_Slow) as url:
        cfg = k8s_client.Configuration()
        cfg.host = url
        sender = gathered.Gatherer(cfg, limit=2, connect_timeout=0.3)
        try:
            item = gathered.Item("POST", cfg.host + "/api/v1/namespaces/x/events", b"{}", ["Content-Type: application/json"], 30.0)
            out = sender.send([item] * 8)  # four turns of two, 0.2 s each: longer than the connect timeout
        finally:
            sender.close()
    assert out == [(201, b"{}")] * 8


class _Tokens:
    """A client-side rate limit with set delays: the first token due at once, the next three a
    second after they are taken (one group), the fifth 1.5 s after (the next group). Notes when
    each token falls due and how many were taken."""

    unlimited = False
    DELAYS = [0.0, 1.0, 1.0, 1.0, 1.5]

    def __init__(self) -> None:
        self.taken = 0
        self.due: list[float] = []

    def reserve(self) -> float:
        delay = self.DELAYS[self.taken]
        self.taken += 1
        self.due.append(time.monotonic() + delay)
        return delay

    def acquire(self) -> None:
        time.sleep(self.reserve())


def test_a_rate_limited_batch_goes_out_in_groups_of_due_tokens_while_the_first_are_answered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The rate limit's waits overlap the server's work: the first request is on the wire before
    the next token falls due (taking every token first left the server idle through the whole
    wait, which cost a third of the hub's admissions/s against the dev-cluster). The tokens
    falling due together go out together, when the last of them is due: one wake-up per group
    (each alone as its token fell due cost twice the client CPU per request at qps 500)."""
    tokens = _Tokens()
    seen: dict[int, tuple[float, int]] = {}  # request -> when it reached the server, tokens taken by then

    class Counting(_Slow):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen[int(body)] = (time.monotonic(), tokens.taken)
            self.send_response(201)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

    with serving(Counting) as url:
        cfg = k8s_client.Configuration()
        cfg.host = url
        transport = ApiClientTransport(cfg)
        monkeypatch.setattr(transport, "limiter", tokens)
        try:
            out = transport.send_many([Request("POST", "/api/v1/namespaces/x/events", body=str(i).encode()) for i in range(5)])
        finally:
            transport.close()
    assert [r.status for r in out if isinstance(r, Response)] == [201] * 5
    assert seen[0][0] < tokens.due[1]  # on the wire before the next token fell due
    for i in (1, 2, 3):  # one group: sent once its last token was due, the next group's first taken
        assert seen[i][0] >= tokens.due[3]
        assert seen[i][1] == 5
    assert seen[4][0] >= tokens.due[4]


def test_the_statuses_a_batch_of_creates_dropped_go_out_in_one_more_batch(
    api: ApiServer, names: Names, monkeypatch: pytest.MonkeyPatch,
) -> None:
    with open_store(api.kubeconfig) as store:
        batches: list[list[str]] = []
        send_many = store.transport.send_many  # type: ignore[attr-defined]

        def counting(reqs: list[Request], **kwargs: Any) -> Any:
            batches.append([r.method for r in reqs])
            return send_many(reqs, **kwargs)

        def one_by_one(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("a dropped status was written on its own")

        monkeypatch.setattr(store.transport, "send_many", counting)
        monkeypatch.setattr(store.transport, "send", one_by_one)
        queues = [names.name(f"q{i}") for i in range(3)]
        out = store.write_concurrently([(True, {**cq(q), "status": {"pendingWorkloads": i}}) for i, q in enumerate(queues)])
        assert batches == [["POST"] * 3, ["PATCH"] * 3]
        for i, (q, got) in enumerate(zip(queues, out, strict=True)):
            assert isinstance(got, dict) and got["status"] == {"pendingWorkloads": i}
            stored = store.get("ClusterQueue", "", q)
            assert stored is not None and stored["status"] == {"pendingWorkloads": i}
            assert got["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
