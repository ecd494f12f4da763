"""Every mkhub subcommand and every argument has help text (what `mkhub X --help` prints)."""

from __future__ import annotations

import argparse

from hub.cli import build_parser


def _walk(parser: argparse.ArgumentParser, path: str) -> list[str]:
    missing = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                if name in helps and not helps[name]:
                    missing.append(f"{path} {name}")
                missing.extend(_walk(sub, f"{path} {name}"))
        elif action.help is None:
            missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    return missing


def test_every_subcommand_and_argument_has_help() -> None:
    assert _walk(build_parser(), "mkhub") == []
