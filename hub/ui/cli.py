"""``mkhub ui token`` (``mkhub ui screenshots`` is hub.demo.ui_shots: it starts a hub and agents)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .auth import TOKENS_FILE, new_token


def ui_main(args: argparse.Namespace) -> int:
    if args.action == "token":
        path = Path(args.tokens_file) if args.tokens_file else Path(args.data_dir) / TOKENS_FILE
        try:
            token = new_token(path)
        except OSError as exc:
            print(f"error: ui token: cannot write {path}: {exc.strerror or exc}", file=sys.stderr)
            return 1
        print(token)
        print(f"(its hash is in {path}; the hub accepts it at once. Open the dashboard and paste it.)", file=sys.stderr)
        return 0
    print(f"error: ui: unknown action {args.action!r}", file=sys.stderr)
    return 2
