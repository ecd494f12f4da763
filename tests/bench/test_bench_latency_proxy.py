"""The benchmark's loopback latency proxy forwards every byte, both ways, in order, and adds at
least the round trip it was given (a lower bound: a loaded machine only adds to it)."""

from __future__ import annotations

import socket
import threading
import time

from hub.bench.latency_proxy import latency_proxy


def _echo_server() -> tuple[socket.socket, int]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()

    def serve() -> None:
        conn, _ = srv.accept()
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    threading.Thread(target=serve, daemon=True).start()
    return srv, int(srv.getsockname()[1])


def test_bytes_go_through_both_ways_a_round_trip_later() -> None:
    srv, port = _echo_server()
    payload = bytes(range(256)) * 1000
    with srv, latency_proxy(("127.0.0.1", port), 20) as proxy, socket.create_connection(("127.0.0.1", proxy.port)) as c:
        start = time.perf_counter()
        c.sendall(b"x")
        assert c.recv(1) == b"x"
        assert time.perf_counter() - start >= 0.020
        c.sendall(payload)
        got = b""
        while len(got) < len(payload):
            got += c.recv(65536)
        assert got == payload
