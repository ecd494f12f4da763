"""Where mkhub's own files are, in a checkout and in an installed wheel."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def samples_dir() -> Path:
    """The sample manifests (``manifests/samples`` of the repository).

    A wheel ships them as package data (``hub/manifests/samples``, copied there by
    setup.py's build step); an editable install or a checkout reads the repository's.
    """
    packaged = _PACKAGE / "manifests" / "samples"
    if packaged.is_dir():
        return packaged
    return _PACKAGE.parent / "manifests" / "samples"
