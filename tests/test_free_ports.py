"""hub.ports.free_port: ports below the ephemeral range, taken in turns across processes."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from hub import ports


@pytest.fixture
def counter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "ports"
    monkeypatch.setattr(ports, "_COUNTER", path)
    return path


def test_ports_come_from_below_the_ephemeral_range(counter: Path) -> None:
    low = ports._ephemeral_low()
    got = [ports.free_port() for _ in range(20)]
    assert all(low - ports._SPAN <= port < low for port in got)
    assert len(set(got)) == 20  # handed out in turn, not the same free port again


def test_a_port_in_use_is_skipped(counter: Path) -> None:
    first = ports.free_port()
    counter.write_text(str(first - (ports._ephemeral_low() - ports._SPAN)))  # the next turn is `first` again
    with socket.socket() as held:
        held.bind(("127.0.0.1", first))
        held.listen()
        assert ports.free_port() == first + 1


def test_processes_take_turns(counter: Path) -> None:
    code = (f"from pathlib import Path; import hub.ports as p; p._COUNTER = Path({str(counter)!r}); "
            "print(' '.join(str(p.free_port()) for _ in range(50)))")
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) for _ in range(4)]
    got = [int(port) for proc in procs for port in proc.communicate(timeout=60)[0].split()]
    assert all(proc.returncode == 0 for proc in procs)
    assert len(got) == 200 and len(set(got)) == 200


def test_an_unusable_counter_falls_back_to_the_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ports, "_COUNTER", tmp_path / "missing-dir" / "ports")
    port = ports.free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # free
