"""Where kubectl, the referee of the Kubernetes-mode tests, is missing.

Locally such a test skips itself. In CI (``CI=true``) it fails instead: a fresh CI machine
without kubectl would otherwise skip the whole kubectl referee without a word.
``make system-deps`` (run by ``make test``) installs kubectl as Debian's kubernetes-client.
Shared by tests/ and e2e/ (e2e/conftest.py puts this folder on the import path).
"""

from __future__ import annotations

import os

import pytest

KUBECTL = "/usr/bin/kubectl"


def kubectl_or_skip(path: str = KUBECTL) -> None:
    if os.path.isfile(path) and os.access(path, os.X_OK):
        return
    why = f"{path} is not installed (`make system-deps` installs Debian's kubernetes-client)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{why}, and CI=true: the kubectl tests must run in CI, not skip", pytrace=False)
    pytest.skip(why)
