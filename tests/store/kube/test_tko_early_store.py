"""A hub on Kubernetes starts listing before it imports the rest of itself (issue 26's start-up):
``mkhub serve`` opens the store on a thread of its own as soon as its options are known, and
:func:`open_backend` takes that store over (no second list) and fences its writes by the Lease."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from hub.service import kubemode
from hub.service.kubemode import KubeOptions, open_backend, open_early

from .conftest import ApiServer, Names


def test_open_backend_takes_over_the_early_store_and_fences_it(api: ApiServer, names: Names) -> None:
    opts = KubeOptions(api.kubeconfig, lease_name=names.name("leader"), lease_namespace=names.namespace,
                       lease_duration=3.0, renew_deadline=2.0, retry_period=0.5)
    open_early(opts)
    early = kubemode._EARLY[opts]
    store = early.store.result(timeout=60)
    assert store.fence is None  # listed before the Lease existed

    backend = asyncio.run(open_backend(opts, asyncio.Event(), lambda: None))
    assert backend is not None
    try:
        assert backend.store is store and backend.transport is early.transport.result()
        assert store.informers["Workload"].stats.lists == 1  # the early list, not a second one
        assert store.fence is not None and store.fence()  # writes are fenced by the Lease now
        assert store.lease_remaining is not None and store.lease_remaining() > 0
        assert opts not in kubemode._EARLY
    finally:
        backend.close()


def test_serve_starts_listing_before_it_imports_the_hub(tmp_path: Path) -> None:
    # open_early is replaced by one that reports whether the hub's serving half is imported yet.
    probe = (
        "import sys\n"
        "import hub.service.kubemode as km\n"
        "def early(opts):\n"
        "    raise SystemExit(3 if 'hub.service.serve' in sys.modules else 0)\n"
        "km.open_early = early\n"
        "from hub.cli import main\n"
        f"sys.exit(main(['serve', '--kubeconfig', {str(tmp_path / 'none')!r}, '--insecure', '--leader-elect', 'false']))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
