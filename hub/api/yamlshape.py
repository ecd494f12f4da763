"""YAML that nests too deep or whose aliases expand too far, found from the parser's events alone.

PyYAML's composer is recursive and builds every node an alias (``*ref``) repeats: a few hundred
bytes of nested aliases are 10**8 nodes, and deep nesting overflows the stack. The parser itself
is an iterative state machine, so its events give the nesting depth and, counting what each
alias repeats, the number of nodes the document expands to, with nothing built.
"""

from __future__ import annotations

import yaml

from .limits import MAX_DEPTH, MAX_NODES


class YamlShapeError(ValueError):
    """``what`` reads after "the document": "is nested deeper than ..." or "expands to more than ..."."""

    def __init__(self, what: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(what)
        self.what = what
        self.line = line  # 1-based, where the refused nesting starts (depth only)
        self.column = column


def check_yaml_shape(text: str) -> None:
    """Raise :class:`YamlShapeError` for text nested deeper than MAX_DEPTH or expanding past MAX_NODES."""
    anchors: dict[str, int] = {}  # anchor -> nodes it stands for
    open_at: list[tuple[int, str | None]] = []  # per open map or list: (nodes before it, its anchor)
    nodes = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            open_at.append((nodes, event.anchor))
            nodes += 1
            if len(open_at) > MAX_DEPTH:
                mark = event.start_mark
                line, column = (mark.line + 1, mark.column + 1) if mark is not None else (None, None)
                raise YamlShapeError(f"is nested deeper than {MAX_DEPTH} levels", line, column)
        elif isinstance(event, yaml.CollectionEndEvent):
            before, anchor = open_at.pop()
            if anchor is not None:
                anchors[anchor] = nodes - before
        elif isinstance(event, yaml.AliasEvent):
            nodes += anchors.get(str(event.anchor), 1)
        elif isinstance(event, yaml.ScalarEvent):
            nodes += 1
            if event.anchor is not None:
                anchors[event.anchor] = 1
        if nodes > MAX_NODES:
            raise YamlShapeError(f"expands to more than {MAX_NODES} nodes")
