"""Where kubectl, the referee of the Kubernetes-mode tests, is missing or too old.

Locally such a test skips itself. In CI (``CI=true``) it fails instead: a fresh CI machine
without kubectl would otherwise skip the whole kubectl referee without a word.
``make system-deps`` (run by ``make test``) installs kubectl as Debian's kubernetes-client.
The tests need kubectl v1.32 or newer (Debian bookworm's kubernetes-client is v1.20, which
cannot read this API's OpenAPI document): an older one counts as missing, with its version.
Shared by tests/ and e2e/ (e2e imports it as ``tests.kubectl_tool``).
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess

import pytest

KUBECTL = "/usr/bin/kubectl"
MIN_MINOR = 32  # kubectl v1.32, the version the kubectl tests were written against


@functools.cache
def client_version(path: str) -> tuple[int, int] | None:
    """(major, minor) of the kubectl at ``path``; None when it does not say."""
    try:
        done = subprocess.run([path, "version", "--client", "-o", "json"], capture_output=True, text=True,
                              timeout=30, check=False)
        info = json.loads(done.stdout)["clientVersion"]
        return int(info["major"]), int(re.sub(r"\D.*", "", info["minor"]))
    except (OSError, ValueError, KeyError, TypeError, subprocess.TimeoutExpired):
        return None


def kubectl_or_skip(path: str = KUBECTL) -> None:
    why = ""
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        why = f"{path} is not installed (`make system-deps` installs Debian's kubernetes-client)"
    else:
        version = client_version(path)
        if version is None or version < (1, MIN_MINOR):
            found = "an unknown version" if version is None else f"v{version[0]}.{version[1]}"
            why = f"{path} is {found}; the kubectl tests need v1.{MIN_MINOR} or newer"
    if not why:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{why}, and CI=true: the kubectl tests must run in CI, not skip", pytrace=False)
    pytest.skip(why)
