"""Many independent requests in flight at once, through libcurl's multi interface (pycurl).

The hub's round writes its Workload statuses, Events and queue statuses as batches of
independent requests: about three per admission. Sent from a pool of threads over urllib3,
each paid a thread hand-off, a future, and urllib3's and http.client's pure-Python request
building and header parsing: 350-490 µs of client CPU per request on loopback (measured,
2-core VM under load). aiohttp's client gathered on an event loop was tried first: 200-320 µs.
libcurl does the HTTP in C: 45-65 µs per request, batches of 1 to 64, with every request of a
batch on the wire at once (up to ``limit`` connections, kept open between batches), on the
caller's thread: no hand-off at all. libcurl is as well kept as HTTP clients come.

The official client keeps everything else (configuration, authentication, watches, single
requests). The TLS settings mirror its urllib3 pool (CA file, client certificate and key,
``verify_ssl``, ``assert_hostname=False``); a configuration this module cannot mirror exactly
(a proxy, a pinned ``assert_hostname``, ``tls_server_name``, CA data instead of a file, socket
options) is not gathered: :func:`usable` says so and the caller sends one by one.
"""

from __future__ import annotations

import contextlib
import select
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

try:
    import pycurl  # type: ignore[import-untyped]
except ImportError:  # a platform without its wheel: the store sends one by one, as before
    pycurl = None

from hub.store.interface import StoreError

# Under a sustained rate limit, requests whose tokens fall due within this window of each other go
# out together when the last is due (at qps 500, about ten): one wake-up of the batch and of the
# informers reading their echoes per group instead of per token. The rate is the bucket's still,
# a request waits at most this much longer, and a token due at once is never held.
GROUP_WINDOW = 0.02


def _group_due(held: deque[tuple[int, float]]) -> float | None:
    """When the first group of held requests goes out: its last token's due time."""
    if not held:
        return None
    first = held[0][1]
    return max(due for _, due in held if due - first < GROUP_WINDOW)


class GatherError(StoreError):
    """A request of a batch could not be sent or answered (the connection, a timeout, TLS)."""


def usable(configuration: Any) -> bool:
    """Whether :class:`Gatherer` reaches the server as the official client's pool would."""
    return pycurl is not None and not (
        configuration.proxy
        or isinstance(configuration.assert_hostname, str)
        or configuration.tls_server_name
        or configuration.socket_options
        or (configuration.ca_cert_data and not configuration.ssl_ca_cert)
    )


class Item(NamedTuple):
    """One request of a batch: method, absolute URL, body, header lines, timeout (seconds). (A
    tuple: one is built per request, a frozen dataclass cost three times as much.)"""

    method: str
    url: str
    body: bytes | None
    headers: list[str]
    timeout: float


class _Handle:
    """An easy handle, kept across requests, and what it was last set to: an option that did not
    change is not set again (a header list set anew was copied into a fresh libcurl list and the
    old one freed, each request), and the body sink is bound once."""

    __slots__ = ("curl", "parts", "headers", "method")

    def __init__(self, curl: Any) -> None:
        self.curl = curl
        self.parts: list[bytes] = []  # the response body, as libcurl hands it over in pieces
        self.headers: list[str] | None = None  # the Item.headers list whose lines are set
        self.method = ""  # the method set
        curl.setopt(pycurl.WRITEFUNCTION, self.parts.append)


class _Driver:
    """One thread's multi handle, driven by its sockets' readiness (libcurl's
    ``curl_multi_socket_action``): each wake-up runs only the transfer whose socket is ready.
    ``curl_multi_perform`` ran every transfer in flight at each wake-up, a ``recv`` that found
    nothing for each: 19 system calls per request with 16 in flight (strace of the hub)."""

    __slots__ = ("multi", "idle", "_poller", "_watched", "_timer_at")

    def __init__(self, limit: int) -> None:
        self.multi = pycurl.CurlMulti()
        self.multi.setopt(pycurl.M_MAX_TOTAL_CONNECTIONS, limit)
        self.multi.setopt(pycurl.M_MAXCONNECTS, limit)
        self.idle: list[_Handle] = []
        self._poller = select.epoll()
        self._watched: dict[int, int] = {}  # socket -> the epoll events libcurl wants of it
        self._timer_at: float | None = None  # when libcurl wants its timeout action
        self.multi.setopt(pycurl.M_SOCKETFUNCTION, self._socket)
        self.multi.setopt(pycurl.M_TIMERFUNCTION, self._timer)

    def _socket(self, what: int, fd: int, multi: Any, socketp: Any) -> None:
        """libcurl: watch ``fd`` for ``what`` (in, out, both) or no longer (remove)."""
        if what == pycurl.POLL_REMOVE:
            if self._watched.pop(fd, None) is not None:
                with contextlib.suppress(OSError):  # closed already: epoll forgot it itself
                    self._poller.unregister(fd)
            return
        events = (select.EPOLLIN if what & pycurl.POLL_IN else 0) | (select.EPOLLOUT if what & pycurl.POLL_OUT else 0)
        if self._watched.get(fd) == events:
            return
        try:
            if fd in self._watched:
                self._poller.modify(fd, events)
            else:
                self._poller.register(fd, events)
        except FileNotFoundError:  # a socket number reused after a close epoll saw first
            self._poller.register(fd, events)
        except FileExistsError:
            self._poller.modify(fd, events)
        self._watched[fd] = events

    def _timer(self, timeout_ms: int) -> None:
        self._timer_at = None if timeout_ms < 0 else time.monotonic() + timeout_ms / 1000

    def drive(self, wait: float, *, gather: bool = False) -> None:
        """Run what is due: libcurl's timeout action when due, else wait up to ``wait`` seconds for
        a socket and run the transfers whose sockets are ready. ``gather``: wait the whole ``wait``
        (or until libcurl's timer) and then run every transfer ready by then, in one wake-up."""
        at = self._timer_at
        if at is not None:
            left = at - time.monotonic()
            if left <= 0:
                self._timer_at = None
                self.multi.socket_action(pycurl.SOCKET_TIMEOUT, 0)
                return
            wait = min(wait, left)
        if gather and wait > 0:
            time.sleep(wait)
            wait = 0.0
        for fd, events in self._poller.poll(wait):
            mask = (pycurl.CSELECT_IN if events & select.EPOLLIN else 0) | (
                pycurl.CSELECT_OUT if events & select.EPOLLOUT else 0) | (
                pycurl.CSELECT_ERR if events & (select.EPOLLERR | select.EPOLLHUP) else 0)
            self.multi.socket_action(fd, mask)

    def close(self) -> None:
        self.multi.close()
        self._poller.close()


class Gatherer:
    """libcurl multi handles, one per calling thread (a multi handle is not thread-safe), each
    keeping up to ``limit`` connections to the server open between batches."""

    def __init__(self, configuration: Any, *, limit: int, connect_timeout: float) -> None:
        self._limit = max(1, limit)
        self._connect_ms = int(connect_timeout * 1000)
        self._tls: list[tuple[int, Any]] = []
        if str(configuration.host).startswith("https"):
            verify = bool(configuration.verify_ssl)
            self._tls += [(pycurl.SSL_VERIFYPEER, int(verify)),
                          (pycurl.SSL_VERIFYHOST, 2 if verify and configuration.assert_hostname is not False else 0)]
            if configuration.ssl_ca_cert:
                self._tls.append((pycurl.CAINFO, str(configuration.ssl_ca_cert)))
            if configuration.cert_file:
                self._tls.append((pycurl.SSLCERT, str(configuration.cert_file)))
            if configuration.key_file:
                self._tls.append((pycurl.SSLKEY, str(configuration.key_file)))
        self._local = threading.local()
        self._closed = False

    def _driver(self) -> _Driver:
        driver: _Driver | None = getattr(self._local, "driver", None)
        if driver is None:
            driver = self._local.driver = _Driver(self._limit)
        return driver

    def _new_handle(self) -> _Handle:
        """An easy handle with the options every request shares (kept across reuses)."""
        curl = pycurl.Curl()
        curl.setopt(pycurl.NOSIGNAL, 1)  # timeouts without SIGALRM: we are not the main thread
        curl.setopt(pycurl.PROXY, "")  # never the environment's proxy (the official client ignores it too)
        curl.setopt(pycurl.CONNECTTIMEOUT_MS, self._connect_ms)
        for option, value in self._tls:
            curl.setopt(option, value)
        return _Handle(curl)

    @staticmethod
    def _prepare(handle: _Handle, item: Item, timeout: float) -> None:
        """What differs between requests: set whenever it differs from what the handle's previous
        request set, so nothing of that request carries over."""
        curl = handle.curl
        curl.setopt(pycurl.URL, item.url)
        curl.setopt(pycurl.TIMEOUT_MS, max(1, int(timeout * 1000)))
        if item.method == "GET":
            if handle.method != "GET":
                curl.setopt(pycurl.HTTPGET, 1)  # also drops the previous request's body
                curl.unsetopt(pycurl.CUSTOMREQUEST)
        else:
            if handle.method != item.method:
                curl.setopt(pycurl.CUSTOMREQUEST, item.method)
            curl.setopt(pycurl.POSTFIELDS, item.body or b"")
        handle.method = item.method
        if handle.headers is not item.headers:  # a batch's requests share their header list
            # "Expect:" off: no 100-continue round trip before a body over 1 KB.
            curl.setopt(pycurl.HTTPHEADER, [*item.headers, "Expect:"])
            handle.headers = item.headers
        handle.parts.clear()

    def send(
        self, items: Sequence[Item], *, pace: Callable[[], float] | None = None
    ) -> list[tuple[int, bytes] | GatherError]:
        """Every request of the batch, ``limit`` on the wire at a time; each answer or error in its
        place. A request is handed to libcurl only when a connection is free for it: libcurl's
        connect timeout counts from the hand-over, so requests queued inside it behind a long
        batch timed out without ever being sent. Each request's own time is what remains of
        its ``timeout``, counted from the start of the batch (a lease-bounded write must not
        outlive the lease however long it waited).

        ``pace``: the client-side rate limit (a token bucket's ``reserve``: take a token, return
        the seconds until it is due). A request's token is taken when a connection is free for
        it; a request whose token is due goes out at once, the others in groups of
        :data:`GROUP_WINDOW`, while the requests already sent are answered: the batch's waits
        overlap the server's work, and the answers that come in while a group waits are read when
        it goes out, in the same wake-up. (Taking every token before sending anything left the server
        idle through the whole wait: with qps 500, 4 s of a 3,000-write batch. Sending each
        request alone as its token fell due cost 200-250 µs of client CPU per request against
        95-100 µs in groups and 50-60 µs unpaced.)"""
        if self._closed:
            raise GatherError("the transport is closed")
        out: list[tuple[int, bytes] | GatherError | None] = [None] * len(items)
        if not items:
            return []
        driver = self._driver()
        multi, idle = driver.multi, driver.idle
        start = time.monotonic()
        waiting = deque(range(len(items)))
        active: dict[int, tuple[_Handle, int]] = {}  # id(its curl) -> handle, index
        held: deque[tuple[int, float]] = deque()  # requests whose tokens are taken but not due, with when due
        try:
            while waiting or active or held:
                added = False
                now = time.monotonic()
                # Take tokens while a connection is free for them: a request whose token is due goes
                # out now; the others are held, and the taking stops a window past the first held one.
                while waiting and len(active) + len(held) < self._limit:
                    delay = pace() if pace is not None else 0.0
                    i = waiting.popleft()
                    if delay <= 0 and not held:
                        added = self._start(items[i], i, start, now, idle, multi, active, out) or added
                        continue
                    held.append((i, now + delay))
                    if held[-1][1] - held[0][1] >= GROUP_WINDOW:
                        break
                group_due = _group_due(held)
                if group_due is not None and group_due <= now:
                    while held and held[0][1] <= group_due:
                        i = held.popleft()[0]
                        added = self._start(items[i], i, start, now, idle, multi, active, out) or added
                    group_due = _group_due(held)
                if added:
                    driver.drive(0.0)  # libcurl asked for its timeout action at once: start them
                finished = False
                while True:
                    left, done, errors = multi.info_read()
                    for curl in done:
                        self._finish(multi, idle, active, curl, out, None)
                    for curl, _errno, message in errors:
                        self._finish(multi, idle, active, curl, out, message)
                    finished = finished or bool(done or errors)
                    if not left:
                        break
                if finished:
                    continue
                wait = 0.5 if group_due is None else min(0.5, max(0.0, group_due - time.monotonic()))
                if active:
                    # While a group waits for its tokens, the answers that come in meanwhile are read
                    # together when it is due, not one wake-up each (the hub's round thread: 4.5 to 3
                    # context switches an admission, 215 to 190 µs of CPU a request, bench kube).
                    driver.drive(wait, gather=group_due is not None)
                elif held:
                    time.sleep(wait)  # nothing in flight: the next group's tokens are not due yet
        except pycurl.error as exc:
            raise GatherError(f"sending {len(items)} requests: {exc}") from None
        finally:
            for handle, _ in active.values():
                multi.remove_handle(handle.curl)
                idle.append(handle)
        return [got if got is not None else GatherError("not sent") for got in out]

    def _start(
        self, item: Item, i: int, start: float, now: float, idle: list[_Handle], multi: Any,
        active: dict[int, tuple[_Handle, int]], out: list[tuple[int, bytes] | GatherError | None],
    ) -> bool:
        """Hand request ``i`` to libcurl with what is left of its timeout; False when none is left."""
        remaining = item.timeout - (now - start)
        if remaining <= 0:
            out[i] = GatherError(f"{item.method} {item.url}: timed out waiting for a connection or its rate-limit token")
            return False
        handle = idle.pop() if idle else self._new_handle()
        self._prepare(handle, item, remaining)
        multi.add_handle(handle.curl)
        active[id(handle.curl)] = (handle, i)
        return True

    @staticmethod
    def _finish(
        multi: Any, idle: list[_Handle], active: dict[int, tuple[_Handle, int]], curl: Any,
        out: list[tuple[int, bytes] | GatherError | None], error: str | None,
    ) -> None:
        handle, i = active.pop(id(curl))
        out[i] = GatherError(f"{curl.getinfo(pycurl.EFFECTIVE_URL)}: {error}") if error is not None else (
            int(curl.getinfo(pycurl.RESPONSE_CODE)), b"".join(handle.parts))
        handle.parts.clear()
        multi.remove_handle(curl)
        idle.append(handle)

    def close(self) -> None:
        """No more batches. Each thread's connections close with its multi handle, when the
        thread or this object goes (closing another thread's handle while it sends would crash)."""
        self._closed = True
        driver = getattr(self._local, "driver", None)
        if driver is not None:
            self._local.driver = None
            driver.close()
