"""Shared fixtures of the end-to-end tests: hubs and agents as real child processes.

* ``start_hub`` / ``start_agent`` (per test) and ``module_hub`` (per module) start
  ``mkhub serve`` / ``mkagent`` in the test's own temporary directory on free ports,
  apply a setup manifest, and stop every process they started at teardown, so tests can
  run in parallel (``pytest -n``) without sharing a port or a data dir.
* A test that uses a module-scoped (or wider) fixture is put in an ``xdist_group`` of its
  module, so with ``--dist loadgroup`` the tests sharing one hub run on one worker, while
  every other test is spread individually. Nothing to declare in new test files.
* :func:`cli_harness.progress` prints what a long test waits for on the terminal, even
  under xdist (``wait_for`` uses it), so ``make test`` is never silent for a minute.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import cli_harness
import proc_leaks
import pytest
from cli_harness import AgentFactory, HubFactory, run_cli

from hub.demo.processes import AgentProcess, HubProcess
from tests.kubectl_tool import kubectl_or_skip

# Every dev-cluster the suites start keeps few changes (kube-apiserver's watch cache is short
# too): watches resumed late meet 410 Expired and clients re-list, as on a real cluster.
E2E_WATCH_WINDOW = "200"


def pytest_configure(config: pytest.Config) -> None:
    cli_harness.set_progress_config(config)
    os.environ.setdefault("MKHUB_WATCH_WINDOW", E2E_WATCH_WINDOW)  # inherited by every `mkhub dev-cluster`


def pytest_itemcollected(item: pytest.Item) -> None:
    # Per item as collected: before any pytest_collection_modifyitems (xdist reads the groups there).
    info = getattr(item, "_fixtureinfo", None)
    if info is None or item.get_closest_marker("xdist_group"):
        return
    # baseid "" is a plugin's fixture (tmp_path_factory, worker_id...); the rest are the suite's own.
    if any(d.scope != "function" and d.baseid != "" for defs in info.name2fixturedefs.values() for d in defs):
        item.add_marker(pytest.mark.xdist_group(name=item.nodeid.split("::")[0]))


@pytest.fixture(autouse=True)
def _no_process_outlives_its_test() -> Iterator[None]:
    """Every process a test (or its function-scoped fixtures) started is stopped by its teardown,
    even a replacement the test started itself: otherwise killed by PID here, and an error."""
    before = set(proc_leaks.descendants())
    yield
    left = proc_leaks.leaked_since(before)
    assert not left, f"processes left running by this test (now killed): {left}"


@pytest.fixture(autouse=True, scope="module")
def _no_process_outlives_its_module() -> Iterator[None]:
    """The same for the module-scoped fixtures (``module_hub``...)."""
    before = set(proc_leaks.descendants())
    yield
    left = proc_leaks.leaked_since(before)
    assert not left, f"processes left running by this module (now killed): {left}"


@pytest.fixture
def kubectl_required() -> None:
    """For tests that drive kubectl: a skip where it is missing, a failure when CI=true."""
    kubectl_or_skip()


def _start_hub(base: Path, setup: str | None, extra_args: Sequence[str], env: dict[str, str] | None,
               name: str, mp: pytest.MonkeyPatch) -> HubProcess:
    with mp.context() as m:
        for k, v in (env or {}).items():
            m.setenv(k, v)
        hub = HubProcess(base / name, extra_args=list(extra_args)).start()
    if setup:
        done = run_cli(["apply", "-f", "-", *hub.connection_args()], stdin=setup)
        if done.returncode != 0:
            hub.terminate()
            raise AssertionError(f"setup refused: {done.stderr}")
    return hub


@pytest.fixture
def start_hub(tmp_path: Path) -> Iterator[HubFactory]:
    """``start_hub(setup=None, extra_args=(), env=None, name="hub")``: a started hub, setup applied."""
    started: list[HubProcess] = []
    mp = pytest.MonkeyPatch()

    def start(setup: str | None = None, extra_args: Sequence[str] = (), env: dict[str, str] | None = None,
              name: str = "hub") -> HubProcess:
        started.append(_start_hub(tmp_path, setup, extra_args, env, name, mp))
        return started[-1]

    try:
        yield start
    finally:
        for hub in reversed(started):
            hub.kill()


@pytest.fixture(scope="module")
def module_hub(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[HubFactory]:
    """As ``start_hub``, but the hubs live until the module's last test (for tests that share one)."""
    base = tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])
    started: list[HubProcess] = []
    mp = pytest.MonkeyPatch()

    def start(setup: str | None = None, extra_args: Sequence[str] = (), env: dict[str, str] | None = None,
              name: str = "hub") -> HubProcess:
        started.append(_start_hub(base, setup, extra_args, env, name, mp))
        return started[-1]

    try:
        yield start
    finally:
        for hub in reversed(started):
            hub.kill()


@pytest.fixture
def start_agent(tmp_path: Path) -> Iterator[AgentFactory]:
    """``start_agent(name, hub_address, objects_yaml, extra_args=())``: a started agent; its log is tmp_path/NAME.log."""
    started: list[AgentProcess] = []

    def start(name: str, hub_address: str, objects: str, extra_args: Sequence[str] = ()) -> AgentProcess:
        path = tmp_path / f"{name}-objects.yaml"
        path.write_text(objects)
        agent = AgentProcess(name, hub_address, path, log_path=tmp_path / f"{name}.log", extra_args=list(extra_args))
        started.append(agent.start())
        return agent

    try:
        yield start
    finally:
        for agent in reversed(started):
            agent.terminate()
