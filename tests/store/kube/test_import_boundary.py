"""Only the Kubernetes store back end imports the ``kubernetes`` package."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def imports_kubernetes(path: Path) -> bool:
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "kubernetes" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "kubernetes":
            return True
    return False


def test_only_hub_store_kube_imports_kubernetes() -> None:
    allowed = ROOT / "hub" / "store" / "kube"
    offenders = [
        str(path.relative_to(ROOT))
        for top in ("hub", "worker_agent")
        for path in (ROOT / top).rglob("*.py")
        if allowed not in path.parents and imports_kubernetes(path)
    ]
    assert offenders == []
    assert imports_kubernetes(allowed / "transport.py")  # the check sees a real import
