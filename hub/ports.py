"""Loopback ports for the processes the demo, the benchmarks and the tests start.

Binding port 0 and closing the socket hands out an *ephemeral* port, the same range the kernel
takes every outgoing connection's local port from: on a busy machine another process could take
it (an outgoing connection, or another caller doing the same) between our close and the child
process's bind, which then fails with "address already in use". So the ports come from the range
just below the ephemeral one, which the kernel never hands out by itself, and callers on the same
machine take turns through a counter file under a lock, so no two get the same port until the
range wraps.
"""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path

_SPAN = 10_000  # ports below the ephemeral range handed out before wrapping
_COUNTER = Path(tempfile.gettempdir()) / "mkhub-free-ports"


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _kernel_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def free_port() -> int:
    """A loopback TCP port free now and handed to no other caller of this function recently."""
    low = _ephemeral_low() - _SPAN
    if low < 1024:
        return _kernel_port()
    try:
        import fcntl
    except ImportError:  # not POSIX: the kernel's choice
        return _kernel_port()
    try:
        fd = os.open(_COUNTER, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        return _kernel_port()
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        raw = os.read(fd, 32).decode(errors="replace").strip()
        offset = int(raw) if raw.isdigit() else os.getpid() % _SPAN
        for step in range(_SPAN):
            port = low + (offset + step) % _SPAN
            if _bindable(port):
                os.lseek(fd, 0, os.SEEK_SET)
                os.ftruncate(fd, 0)
                os.write(fd, str((offset + step + 1) % _SPAN).encode())
                return port
        return _kernel_port()
    finally:
        os.close(fd)  # releases the lock
