"""The check behind e2e/conftest.py's ``_no_process_outlives_its_test``: it finds a child process
(and its children) a test left running, kills it by PID, and does not count one that exited."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import proc_leaks


def test_a_child_left_running_is_found_and_killed() -> None:
    before = set(proc_leaks.descendants())
    # A child that starts a grandchild of its own: both are this test's.
    child = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                              "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); time.sleep(600)"])
    try:
        while len(set(proc_leaks.descendants()) - before) < 2:  # until the grandchild runs
            assert child.poll() is None
            time.sleep(0.05)
        left = proc_leaks.leaked_since(before, grace=0.2)
        assert child.pid in left and len(left) == 2, left
        assert child.wait(30) == -9  # killed by the check, not by this test
        assert proc_leaks.leaked_since(before, grace=30) == {}  # the grandchild too
    finally:
        child.kill()
        child.wait()


def test_a_child_that_exited_is_no_leak() -> None:
    before = set(proc_leaks.descendants())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        assert proc_leaks.leaked_since(before) == {}  # its zombie, before and after the wait, is no leak
    finally:
        child.wait()


def test_what_a_process_running_before_the_test_starts_is_its_own() -> None:
    # As a module's browser or dev-cluster: running before the test, starting a child during it.
    parent = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; "
                               "sys.stdin.readline(); subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
                               "sys.stdin.readline()"], stdin=subprocess.PIPE, text=True)
    assert parent.stdin is not None
    try:
        before = set(proc_leaks.descendants())
        parent.stdin.write("\n")
        parent.stdin.flush()
        while len(proc_leaks.descendants()) < len(before) + 1:  # until its child runs
            time.sleep(0.05)
        assert proc_leaks.leaked_since(before, grace=0.2) == {}
    finally:
        grandchild = set(proc_leaks.descendants(parent.pid))
        parent.kill()
        parent.wait()
        for pid in grandchild:
            os.kill(pid, signal.SIGKILL)
