"""Kubernetes label selectors: the string form (``a=b,c in (x,y),!d``) and the dict form.

Shared by the API model (namespaceSelector, node affinity), the store's list
filter and the CLI's ``-l``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
_OPERATORS: frozenset[str] = frozenset(("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"))

# Kubernetes label syntax: an optional DNS-subdomain prefix and a name of at most 63 chars.
_NAME = r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)"
_KEY_RE = re.compile(rf"^([a-z0-9]([-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_NAME}$")
_VALUE_RE = re.compile(rf"^{_NAME}?$")


class LabelSelectorError(ValueError):
    """A label selector that does not parse."""


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        if op == "NotIn":  # an absent label is "not in" any set, as in Kubernetes
            return labels.get(self.key) not in self.values
        value = labels.get(self.key)
        if value is None:
            return False
        if op == "In":
            return value in self.values
        try:
            have, want = int(value), int(self.values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want

    def __str__(self) -> str:
        op, key, values = self.operator, self.key, self.values
        if op == "Exists":
            return key
        if op == "DoesNotExist":
            return "!" + key
        if op in ("Gt", "Lt"):
            return f"{key}{'>' if op == 'Gt' else '<'}{values[0]}"
        if len(values) == 1:
            return f"{key}{'=' if op == 'In' else '!='}{values[0]}"
        return f"{key} {'in' if op == 'In' else 'notin'} ({','.join(values)})"


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A parsed selector: the AND of its requirements. Empty matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def __str__(self) -> str:
        """The Kubernetes string form (what the API server's labelSelector= takes)."""
        return ",".join(str(r) for r in self.requirements)


Selector = str | Mapping[str, Any] | LabelSelector
"""What selector arguments accept: string form, dict form or an already parsed selector."""


def _requirement(key: str, operator: str, values: Iterable[Any] = ()) -> Requirement:
    if operator not in _OPERATORS:
        raise LabelSelectorError(f"unknown operator {operator!r} for key {key!r}")
    if not isinstance(key, str) or not _KEY_RE.match(key):
        raise LabelSelectorError(f"invalid label key {key!r}")
    vals = tuple(values)
    for v in vals:
        if not isinstance(v, str) or not _VALUE_RE.match(v):
            raise LabelSelectorError(f"invalid label value {v!r} for key {key!r}")
    if operator in ("In", "NotIn") and not vals:
        raise LabelSelectorError(f"{operator} on {key!r} needs at least one value")
    if operator in ("Exists", "DoesNotExist") and vals:
        raise LabelSelectorError(f"{operator} on {key!r} takes no values")
    if operator in ("Gt", "Lt"):
        if len(vals) != 1 or not re.fullmatch(r"-?[0-9]+", vals[0]):
            raise LabelSelectorError(f"{operator} on {key!r} needs exactly one integer value")
    else:
        vals = tuple(sorted(set(vals)))
    return Requirement(key, operator, vals)  # type: ignore[arg-type]  # operator checked above


# One token: an operator, a parenthesis, a comma, or a run of anything else.
_TOKEN_RE = re.compile(r"\s*(==|!=|=|!|<|>|\(|\)|,|[^\s=!<>(),]+)")


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if not m:  # pragma: no cover - the pattern accepts every non-space character
            raise LabelSelectorError(f"cannot parse label selector {text!r} at {pos}")
        tokens.append(m.group(1))
        pos = m.end()
    return tokens


_SPECIAL = frozenset(("==", "!=", "=", "!", "<", ">", "(", ")", ","))


def _parse_string(text: str) -> list[Requirement]:
    toks = _tokenize(text)
    reqs: list[Requirement] = []
    i = 0

    def error(msg: str) -> LabelSelectorError:
        return LabelSelectorError(f"label selector {text!r}: {msg}")

    def word(what: str) -> str:
        nonlocal i
        if i >= len(toks) or toks[i] in _SPECIAL:
            raise error(f"expected {what}")
        i += 1
        return toks[i - 1]

    while i < len(toks):
        if toks[i] == "!":
            i += 1
            reqs.append(_requirement(word("a key after '!'"), "DoesNotExist"))
        else:
            key = word("a key")
            op = toks[i] if i < len(toks) else ","
            if op == ",":
                reqs.append(_requirement(key, "Exists"))
            elif op in ("=", "==", "!="):
                i += 1
                # "key=" selects the empty value, as Kubernetes allows.
                value = "" if i >= len(toks) or toks[i] == "," else word("a value")
                reqs.append(_requirement(key, "NotIn" if op == "!=" else "In", [value]))
            elif op in ("<", ">"):
                i += 1
                reqs.append(_requirement(key, "Gt" if op == ">" else "Lt", [word("an integer")]))
            elif op in ("in", "notin"):
                i += 1
                if i >= len(toks) or toks[i] != "(":
                    raise error(f"expected '(' after {op}")
                i += 1
                values: list[str] = []
                while True:
                    values.append(word("a value"))
                    if i < len(toks) and toks[i] == ",":
                        i += 1
                        continue
                    if i < len(toks) and toks[i] == ")":
                        i += 1
                        break
                    raise error("expected ',' or ')' in value list")
                reqs.append(_requirement(key, "In" if op == "in" else "NotIn", values))
            else:
                raise error(f"unexpected {op!r} after key {key!r}")
        if i < len(toks):
            if toks[i] != ",":
                raise error(f"expected ',' but found {toks[i]!r}")
            i += 1
            if i >= len(toks):
                raise error("trailing ','")
    return reqs


def _parse_mapping(sel: Mapping[str, Any]) -> list[Requirement]:
    unknown = set(sel) - {"matchLabels", "matchExpressions"}
    if unknown:
        raise LabelSelectorError(f"unknown label selector fields: {sorted(unknown)}")
    reqs: list[Requirement] = []
    match_labels = sel.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise LabelSelectorError("matchLabels must be a mapping")
    for key, value in match_labels.items():
        reqs.append(_requirement(key, "In", [value]))
    expressions = sel.get("matchExpressions") or []
    if not isinstance(expressions, list | tuple):
        raise LabelSelectorError("matchExpressions must be a list")
    for expr in expressions:
        if not isinstance(expr, Mapping):
            raise LabelSelectorError(f"matchExpressions entry must be a mapping, not {expr!r}")
        op = expr.get("operator")
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise LabelSelectorError(
                f"matchExpressions operator must be In, NotIn, Exists or DoesNotExist, not {op!r}"
            )
        values = expr.get("values") or []
        if not isinstance(values, list | tuple):
            raise LabelSelectorError(f"matchExpressions values must be a list, not {values!r}")
        reqs.append(_requirement(expr.get("key", ""), op, values))
    return reqs


def parse_label_selector(selector: Selector | None) -> LabelSelector:
    """Parse a selector given in the Kubernetes string form
    (``a=b,c!=d,e in (x,y),f notin (z),g,!h``, also ``==``, ``k>1``, ``k<1``) or the
    metav1.LabelSelector dict form (``matchLabels`` / ``matchExpressions``).
    None and empty select everything. Raises LabelSelectorError."""
    if selector is None:
        return LabelSelector()
    if isinstance(selector, LabelSelector):
        return selector
    if isinstance(selector, str):
        return LabelSelector(tuple(_parse_string(selector)))
    if isinstance(selector, Mapping):
        return LabelSelector(tuple(_parse_mapping(selector)))
    raise LabelSelectorError(f"a label selector must be a string or a mapping, not {type(selector).__name__}")


def selector_matches(selector: Selector | None, labels: Mapping[str, str] | None) -> bool:
    """Whether labels satisfy selector (any form accepted by parse_label_selector)."""
    return parse_label_selector(selector).matches(labels)


def format_label_selector(selector: Any) -> str | None:
    """metav1.FormatLabelSelector: a LabelSelector as text (Scale's status.selector, kubectl's SELECTOR
    column); None when ``selector`` is not one."""
    if not isinstance(selector, dict):
        return None
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for req in selector.get("matchExpressions") or []:
        if not isinstance(req, dict):
            continue
        key, op, values = req.get("key", ""), req.get("operator", ""), sorted(map(str, req.get("values") or []))
        if op == "In":
            parts.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            parts.append(str(key))
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)
