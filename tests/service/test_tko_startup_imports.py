"""Issue 26's start-up: `mkhub serve` imports OpenTelemetry (a tenth of the hub's imports) only
when the environment turns tracing on; with it off (the default) no module of it is loaded."""

from __future__ import annotations

import os
import subprocess
import sys


def test_the_hub_imports_no_tracing_while_tracing_is_off() -> None:
    probe = ("import sys, hub.cli, hub.service.serve, hub.service.kubemode, hub.store.kube, worker_agent.agent; "
             "from hub.obs import tracing; assert not tracing.configure_from_env('mkhub'); "
             "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "[]"
