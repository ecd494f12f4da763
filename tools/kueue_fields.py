"""Inventory of every field of Kueue's API types, parsed from Kueue's Go sources.

    python tools/kueue_fields.py [--repo MIRROR] [--ref REF] [--check]

Reads ``apis/kueue/v1beta{1,2}/*.go`` and ``apis/config/v1beta{1,2}/*.go`` at REF
of a Kueue git checkout (bare or not; default the mirror and its HEAD) and writes
hub/api/kueue_fields.txt: one line per field of every kind mkhub serves and of the
Configuration, as ``version kind path go-type mark reason``. The marks come from
the hand-kept rules in :mod:`hub.api.kueue_fields` (longest matching path prefix);
``unclassified`` marks a field no rule covers, which fails
tests/api/test_kueue_fields.py until a rule says what mkhub does with it.
``--check`` compares instead of writing (exit 1 on a difference).

Only a subset of Go is understood, the one Kueue's API packages use: named struct
types with json-tagged fields, embedded ``json:",inline"`` structs, named scalar,
slice and map types, pointers. Types from other packages (metav1, corev1,
resource) end a path: mkhub serves them whole (Kubernetes' own schemas).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hub.api.kueue_fields import (  # noqa: E402
    CONFIG_KIND,
    FIELDS_FILE,
    KINDS,
    UNCLASSIFIED,
    Field,
    format_fields,
    mark_of,
)

MIRROR = Path("/work/.mirror/kubernetes-sigs+kueue/repo")
_TYPE = re.compile(r"^type\s+(\w+)\s+(.+?)\s*$")
_FIELD = re.compile(r"^\s*(?:(\w+)\s+)?([\w.\[\]*]+)\s+`([^`]*)`")
_JSON = re.compile(r'json:"([^"]*)"')


@dataclass
class GoType:
    name: str
    base: str  # "struct" or a Go type expression
    fields: list[tuple[str, str, list[str]]] = field(default_factory=list)  # (json name, type, markers)


def _git_files(repo: Path, ref: str, folder: str) -> dict[str, str]:
    names = subprocess.run(["git", "-C", str(repo), "ls-tree", "--name-only", f"{ref}:{folder}"],
                           check=True, capture_output=True, text=True).stdout.split()
    out: dict[str, str] = {}
    for name in names:
        if not name.endswith(".go") or name.endswith("_test.go") or name.startswith("zz_generated"):
            continue
        out[name] = subprocess.run(["git", "-C", str(repo), "show", f"{ref}:{folder}/{name}"],
                                   check=True, capture_output=True, text=True).stdout
    return out


def parse_types(sources: dict[str, str]) -> dict[str, GoType]:
    """Named types of a Go package: structs with their json fields, and the others' base types."""
    types: dict[str, GoType] = {}
    for text in sources.values():
        lines = text.splitlines()
        i = 0
        while i < len(lines):
            match = _TYPE.match(lines[i])
            if match is None:
                i += 1
                continue
            name, rest = match.groups()
            if not rest.startswith("struct"):
                types[name] = GoType(name, rest.split("//")[0].strip())
                i += 1
                continue
            gotype = types[name] = GoType(name, "struct")
            markers: list[str] = []
            depth = 1
            i += 1
            while i < len(lines) and depth:
                line = lines[i].strip()
                i += 1
                if line.startswith("//"):
                    if line.startswith("// +"):
                        markers.append(line[3:].strip())
                    continue
                if line == "}":
                    depth -= 1
                    continue
                found = _FIELD.match(line)
                if found is None:
                    if not line:
                        markers = []
                    continue
                fname, ftype, tag = found.groups()
                js = _JSON.search(tag)
                if js is None:
                    markers = []
                    continue
                json_name = js.group(1).split(",")[0]
                if fname is None or (not json_name and ",inline" in js.group(1)):
                    gotype.fields.append(("", ftype, markers))
                elif json_name and json_name != "-":
                    gotype.fields.append((json_name, ftype, markers))
                markers = []
    return types


def _strip(expr: str) -> str:
    return expr.lstrip("*")


def walk_fields(types: dict[str, GoType], root: str, prefix: str = "", seen: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """(path, Go type) of every field under the struct ``root``; ``a.b[].c`` paths, ``{}`` for map values."""
    out: list[tuple[str, str]] = []
    for json_name, expr, _markers in types[root].fields:
        if not json_name:  # embedded
            inner = _strip(expr)
            if inner in types and types[inner].base == "struct":
                out.extend(walk_fields(types, inner, prefix, seen))
            continue
        path = f"{prefix}.{json_name}" if prefix else json_name
        out.append((path, _strip(expr)))
        out.extend(_descend(types, _strip(expr), path, seen))
    return out


def _descend(types: dict[str, GoType], expr: str, path: str, seen: tuple[str, ...]) -> list[tuple[str, str]]:
    expr = _strip(expr)
    if expr.startswith("[]"):
        return _descend(types, expr[2:], f"{path}[]", seen)
    if expr.startswith("map["):
        return _descend(types, expr[expr.index("]") + 1:], f"{path}{{}}", seen)
    gotype = types.get(expr)
    if gotype is None or expr in seen:
        return []
    if gotype.base == "struct":
        return walk_fields(types, expr, path, (*seen, expr))
    return _descend(types, gotype.base, path, (*seen, expr))


def inventory(repo: Path, ref: str) -> list[Field]:
    rows: list[Field] = []
    for version in ("v1beta1", "v1beta2"):
        api = parse_types(_git_files(repo, ref, f"apis/kueue/{version}"))
        for kind in KINDS:
            if kind not in api:
                continue
            for path, expr in walk_fields(api, kind):
                if path in ("apiVersion", "kind", "metadata") or path.startswith("metadata."):
                    continue
                rows.append(Field(version, kind, path, expr, *mark_of(version, kind, path)))
        config = parse_types(_git_files(repo, ref, f"apis/config/{version}"))
        for path, expr in walk_fields(config, CONFIG_KIND):
            if path in ("apiVersion", "kind"):
                continue
            rows.append(Field(version, CONFIG_KIND, path, expr, *mark_of(version, CONFIG_KIND, path)))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=MIRROR, help="a Kueue git checkout or bare mirror")
    parser.add_argument("--ref", default="HEAD", help="the tag or commit to read (default HEAD)")
    parser.add_argument("--check", action="store_true", help="compare with the checked-in list instead of writing")
    args = parser.parse_args(argv)
    commit = subprocess.run(["git", "-C", str(args.repo), "rev-parse", f"{args.ref}^{{commit}}"],
                            check=True, capture_output=True, text=True).stdout.strip()
    described = subprocess.run(["git", "-C", str(args.repo), "describe", "--tags", commit],
                               capture_output=True, text=True).stdout.strip() or args.ref
    text = format_fields(inventory(args.repo, commit), f"kubernetes-sigs/kueue {commit} ({described})")
    if args.check:
        same = FIELDS_FILE.read_text() == text
        print("up to date" if same else f"{FIELDS_FILE} differs from Kueue {described}: run tools/kueue_fields.py")
        return 0 if same else 1
    FIELDS_FILE.write_text(text)
    rows = text.count("\n") - text.count("\n#")
    print(f"wrote {FIELDS_FILE.relative_to(ROOT)}: {rows} fields, {text.count(UNCLASSIFIED)} unclassified")
    return 0


if __name__ == "__main__":
    sys.exit(main())
