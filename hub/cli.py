"""The ``mkhub`` command."""

from __future__ import annotations

import argparse
import sys


def _simulate(args: argparse.Namespace) -> int:
    from hub.sim.runner import main

    return main(args.paths, as_json=args.json)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mkhub", description="A MultiKueue federation hub speaking Kueue's API.")
    sub = parser.add_subparsers(dest="command", required=True)
    sim = sub.add_parser("simulate", help="run Kueue conformance scenario files against the engine")
    sim.add_argument("paths", nargs="+", help="scenario files or folders")
    sim.add_argument("--json", action="store_true", help="print the final state of every workload")
    sim.set_defaults(func=_simulate)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
