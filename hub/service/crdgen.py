"""``mkhub manifests crds``: write the CRDs generated from hub/api to files."""

from __future__ import annotations

import argparse
from pathlib import Path

from hub.api.schema import KUEUE_KINDS, crd_file_name, crd_yaml

DEFAULT_OUT = Path("manifests/crds")


def write_crds(out: Path) -> list[Path]:
    """One file per kind; files whose text is unchanged are not rewritten."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for kind in KUEUE_KINDS:
        path = out / crd_file_name(kind)
        text = crd_yaml(kind)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def manifests_main(args: argparse.Namespace) -> int:
    out = Path(args.out)
    for path in write_crds(out):
        print(path)
    return 0
