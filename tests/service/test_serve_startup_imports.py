"""`mkhub serve` starts without importing what only some requests need: the stand-in API server
(hub.kubeapi, aiohttp's server) comes with the first `mkhub apply` field check, not at start-up."""

from __future__ import annotations

import subprocess
import sys

from hub.service.field_check import STRICT, check_unknown_fields


def test_the_hub_imports_no_api_server_until_a_field_check_needs_it() -> None:
    probe = "import sys, hub.cli, hub.service.serve; print(sorted(m for m in sys.modules if m.startswith('hub.kubeapi')))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_field_check_still_refuses_an_unknown_field() -> None:
    manifest = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "lq"},
                "spec": {"clusterQueue": "cq", "bogusField": 3}}
    error, _ = check_unknown_fields(manifest, STRICT, "LocalQueue lq")
    assert 'unknown field "spec.bogusField"' in error
