"""Object metadata, conditions, times, label selectors, taints and tolerations."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

from .limits import label_value_errors, qualified_name_errors, validate_labels
from .reader import Reader
from .selectors import LabelSelector, Requirement

CONDITION_TRUE = "True"
CONDITION_FALSE = "False"


def parse_time(text: str) -> float:
    """RFC 3339 (``2025-01-01T00:00:00Z``, fractional seconds allowed) to Unix seconds."""
    # Cached: a restore reads the same instants over and over (one round stamps many objects).
    return _cached_time(text) if type(text) is str else _parse_time(text)


@lru_cache(maxsize=8192)
def _cached_time(text: str) -> float:
    return _parse_time(text)


def _parse_time(text: str) -> float:
    value = text.strip()
    if value.endswith("Z") or value.endswith("z"):
        value = value[:-1] + "+00:00"
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


@lru_cache(maxsize=4096)  # a round stamps many objects with the same few instants
def format_time(seconds: float) -> str:
    """Unix seconds to RFC 3339 in UTC; whole seconds print without a fraction, as Kubernetes does."""
    # isoformat omits a zero fraction and writes six digits otherwise, as the strftime forms
    # "%Y-%m-%dT%H:%M:%SZ" and "%Y-%m-%dT%H:%M:%S.%fZ" do, at 60% of their cost; "+00:00" becomes "Z".
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat()[:-6] + "Z"


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def stored_microseconds(seconds: float) -> int:
    """The instant as ``format_time`` writes it, in whole microseconds since the epoch.

    A time read back from storage is a float that rounds to the same microsecond it was
    written with, so this is the same number before and after a round trip; rounding the
    float itself (to milliseconds, say) is not: 43.4434998 rounds down, while its stored
    form 43.443500 may come back as 43.44350000001 and round up."""
    return (datetime.fromtimestamp(seconds, tz=UTC) - _EPOCH) // _MICROSECOND


def read_time(r: Reader, key: str) -> float | None:
    raw = r.raw(key)
    if raw is None:
        return None
    if isinstance(raw, datetime):  # YAML loaders turn unquoted timestamps into datetimes
        return (raw if raw.tzinfo else raw.replace(tzinfo=UTC)).timestamp()
    if not isinstance(raw, str):
        r.errors.invalid(r.at(key), raw, "must be an RFC 3339 time")
        return None
    try:
        return parse_time(raw)
    except ValueError:
        r.errors.invalid(r.at(key), raw, "must be an RFC 3339 time such as 2025-01-01T00:00:00Z")
        return None


@dataclass(slots=True)
class ObjectMeta:
    name: str
    namespace: str = ""
    uid: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    creation_timestamp: float | None = None
    resource_version: str = ""
    generation: int = 0
    deletion_timestamp: float | None = None
    owner_references: list[dict[str, Any]] = field(default_factory=list)
    finalizers: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


def read_meta(r: Reader, namespaced: bool) -> ObjectMeta:
    m = r.child("metadata")
    name = m.string("name")
    if not name:
        r.errors.required(m.at("name"))
    namespace = m.string("namespace") if namespaced else ""
    owner_refs = [dict(o.data) for o in m.items("ownerReferences")]
    return ObjectMeta(
        name=name,
        namespace=namespace,
        uid=m.string("uid"),
        labels=m.string_map("labels"),
        annotations=m.string_map("annotations"),
        creation_timestamp=read_time(m, "creationTimestamp"),
        resource_version=str(m.raw("resourceVersion") or ""),
        generation=m.integer("generation", 0) or 0,
        deletion_timestamp=read_time(m, "deletionTimestamp"),
        owner_references=owner_refs,
        finalizers=m.strings("finalizers"),
    )


def meta_to_dict(meta: ObjectMeta) -> dict[str, Any]:
    out: dict[str, Any] = {"name": meta.name}
    if meta.namespace:
        out["namespace"] = meta.namespace
    if meta.uid:
        out["uid"] = meta.uid
    if meta.resource_version:
        out["resourceVersion"] = meta.resource_version
    if meta.generation:
        out["generation"] = meta.generation
    if meta.creation_timestamp is not None:
        out["creationTimestamp"] = format_time(meta.creation_timestamp)
    if meta.deletion_timestamp is not None:
        out["deletionTimestamp"] = format_time(meta.deletion_timestamp)
    if meta.labels:
        out["labels"] = dict(meta.labels)
    if meta.annotations:
        out["annotations"] = dict(meta.annotations)
    if meta.owner_references:
        out["ownerReferences"] = [dict(o) for o in meta.owner_references]
    if meta.finalizers:
        out["finalizers"] = list(meta.finalizers)
    return out


@dataclass(slots=True)
class Condition:
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: float = 0.0
    observed_generation: int = 0

    @property
    def is_true(self) -> bool:
        return self.status == CONDITION_TRUE


def read_conditions(r: Reader, key: str = "conditions") -> list[Condition]:
    out: list[Condition] = []
    for c in r.items(key):
        out.append(
            Condition(
                type=c.string("type"),
                status=c.enum("status", ("True", "False", "Unknown"), "Unknown"),
                reason=c.string("reason"),
                message=c.string("message"),
                last_transition_time=read_time(c, "lastTransitionTime") or 0.0,
                observed_generation=c.integer("observedGeneration", 0) or 0,
            )
        )
    return out


def conditions_to_list(conditions: list[Condition]) -> list[dict[str, Any]]:
    out = []
    for c in conditions:
        item: dict[str, Any] = {
            "type": c.type,
            "status": c.status,
            "reason": c.reason,
            "message": c.message,
            "lastTransitionTime": format_time(c.last_transition_time),
        }
        if c.observed_generation:
            item["observedGeneration"] = c.observed_generation
        out.append(item)
    return out




# --- label selectors (hub.api.selectors) ---------------------------------------------------

SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def read_label_selector(r: Reader) -> LabelSelector:
    """A ``metav1.LabelSelector`` field, every problem reported with its field path."""
    reqs: list[Requirement] = []
    match_labels = r.string_map("matchLabels")
    validate_labels(match_labels, r.at("matchLabels"), r.errors)
    for key, value in sorted(match_labels.items()):
        reqs.append(Requirement(key, "In", (value,)))
    for e in r.items("matchExpressions"):
        op = e.enum("operator", SELECTOR_OPERATORS, "In")
        values = tuple(e.strings("values"))
        key = e.string("key")
        if not key:
            e.errors.required(e.at("key"))
        for reason in qualified_name_errors(key) if key else ():
            e.errors.invalid(e.at("key"), key, reason)
        for i, value in enumerate(values):
            for reason in label_value_errors(value):
                e.errors.invalid(f"{e.at('values')}[{i}]", value, reason)
        if op in ("In", "NotIn") and not values:
            e.errors.add(e.at("values"), "must be specified when `operator` is 'In' or 'NotIn'")
        if op in ("Exists", "DoesNotExist") and values:
            e.errors.add(e.at("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
        reqs.append(Requirement(key, op, values))  # type: ignore[arg-type]  # enum-checked above
    return LabelSelector(tuple(reqs))


# --- node scheduling constraints --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    def tolerates(self, taint: Taint) -> bool:
        """corev1 Toleration.ToleratesTaint."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if not self.key:  # empty key with Equal matches nothing (only Exists may omit the key)
            return False
        return self.value == taint.value


TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def read_taints(r: Reader, key: str) -> list[Taint]:
    out = []
    for t in r.items(key):
        k = t.string("key")
        if not k:
            t.errors.required(t.at("key"))
        out.append(Taint(k, t.string("value"), t.enum("effect", TAINT_EFFECTS, "NoSchedule")))
    return out


def read_tolerations(r: Reader, key: str) -> list[Toleration]:
    out = []
    for t in r.items(key):
        op = t.enum("operator", ("Equal", "Exists"), "Equal")
        effect = t.string("effect")
        if effect and effect not in TAINT_EFFECTS:
            t.errors.invalid(t.at("effect"), effect, f"supported values: {', '.join(TAINT_EFFECTS)}")
        if op == "Exists" and t.string("value"):
            t.errors.invalid(t.at("value"), t.string("value"), "value must be empty when `operator` is 'Exists'")
        out.append(
            Toleration(t.string("key"), op, t.string("value"), effect, t.integer("tolerationSeconds"))
        )
    return out


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """One required node-affinity term: its expressions are ANDed; terms are ORed."""

    match_expressions: tuple[Requirement, ...]


def read_node_selector_terms(r: Reader) -> list[NodeSelectorTerm]:
    """``affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms``."""
    required = r.child("affinity").child("nodeAffinity").child("requiredDuringSchedulingIgnoredDuringExecution")
    terms = []
    for term in required.items("nodeSelectorTerms"):
        reqs = []
        for e in term.items("matchExpressions"):
            op = e.enum("operator", ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"), "In")
            reqs.append(Requirement(e.string("key"), op, tuple(e.strings("values"))))  # type: ignore[arg-type]
        terms.append(NodeSelectorTerm(tuple(reqs)))
    return terms
