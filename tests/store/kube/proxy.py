"""A TCP proxy in front of the API server that tests use to break connections on purpose.

``drop()`` resets every open connection (a watch dropped mid-stream); ``freeze()``
stops forwarding on the open connections while keeping them open (a silent
watch: no FIN, no RST, no bytes); connections opened later pass normally.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading


class _Pipe:
    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.client = client
        self.upstream = upstream
        self.frozen = False
        self.closed = False

    def close(self) -> None:
        self.closed = True
        for s in (self.client, self.upstream):
            with contextlib.suppress(OSError):
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            with contextlib.suppress(OSError):
                s.close()


class Proxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._pipes: list[_Pipe] = []
        self._lock = threading.Lock()
        self._stopped = False
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True, name="test-proxy").start()

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            pipe = _Pipe(client, upstream)
            with self._lock:
                self._pipes.append(pipe)
                self.accepted += 1
            threading.Thread(target=self._pump, args=(pipe,), daemon=True).start()

    def _pump(self, pipe: _Pipe) -> None:
        pair = {pipe.client: pipe.upstream, pipe.upstream: pipe.client}
        try:
            while not pipe.closed:
                if pipe.frozen:
                    threading.Event().wait(0.05)
                    continue
                ready, _, _ = select.select(list(pair), [], [], 0.05)
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:
                        pipe.close()
                        return
                    pair[sock].sendall(data)
        except OSError:
            pipe.close()

    def drop(self) -> int:
        """Reset every open connection; returns how many."""
        with self._lock:
            pipes, self._pipes = self._pipes, []
        for pipe in pipes:
            pipe.close()
        return len(pipes)

    def freeze(self) -> int:
        """Stop forwarding on every open connection, leaving it open."""
        with self._lock:
            pipes = [p for p in self._pipes if not p.closed]
        for pipe in pipes:
            pipe.frozen = True
        return len(pipes)

    def close(self) -> None:
        self._stopped = True
        self._listener.close()
        self.drop()
