"""``mkhub serve --kubeconfig`` as a subprocess, for the failover test, the e2e test and the bench."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from hub.demo.processes import MKHUB, free_port

FAST_LEASE = ("--lease-duration", "3s", "--renew-deadline", "2s", "--retry-period", "0.5s")


class KubeHub:
    def __init__(self, kubeconfig: Path, log_path: Path, extra_args: Sequence[str] = FAST_LEASE) -> None:
        self.kubeconfig = kubeconfig
        self.log_path = log_path
        self.extra_args = list(extra_args)
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self._offset = 0

    def start(self) -> KubeHub:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [*MKHUB, "serve", "--kubeconfig", str(self.kubeconfig), "--insecure", "--listen", f"127.0.0.1:{self.port}", *self.extra_args],
                stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[self._offset:] if self.log_path.exists() else ""

    def wait_log(self, pattern: str, timeout: float = 60.0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while True:
            found = re.search(pattern, self.log())
            if found:
                return found
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"the hub exited ({self.proc.returncode}) before {pattern!r}:\n{self.log()[-3000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no {pattern!r} in the hub's log within {timeout}s:\n{self.log()[-3000:]}")
            time.sleep(0.05)

    @property
    def identity(self) -> str:
        return self.wait_log(r"for the leader Lease \S+ as (\S+)").group(1)

    def wait_serving(self, timeout: float = 60.0) -> KubeHub:
        self.wait_log(r"state restored; serving", timeout)
        return self

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def terminate(self) -> int | None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return None if self.proc is None else self.proc.returncode
