"""Dynamic Resource Allocation (``resource.k8s.io/v1``) as Kueue accounts for it.

The kinds — DeviceClass, ResourceClaim, ResourceClaimTemplate — typed and checked as
kube-apiserver checks them (the fields Kueue reads; the rest kept as written), and the
rule of Kueue's ``pkg/dra``: a pod template's ``spec.resourceClaims`` entry naming a
ResourceClaimTemplate counts, per pod, the devices each of the template's requests asks for
(``exactly.count``, 1 by default; admin-access requests count nothing) against the quota
resource ``Configuration.resources.deviceClassMappings`` maps its DeviceClass to. A device
class no mapping names, a missing template, ``allocationMode: All``, ``firstAvailable``, or a
pod naming a ResourceClaim makes the workload inadmissible, with Kueue's message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import FieldErrors
from .meta import ObjectMeta
from .reader import Reader
from .validation import is_dns_subdomain, validate_name

DRA_GROUP = "resource.k8s.io"
DRA_VERSIONS = (f"{DRA_GROUP}/v1",)
DRA_KINDS = frozenset({"DeviceClass", "ResourceClaim", "ResourceClaimTemplate"})
EXACT_COUNT = "ExactCount"
ALL = "All"
ALLOCATION_MODES = (EXACT_COUNT, ALL)
# k8s.io/api/resource/v1: DeviceRequestsMaxSize, and DNS-label request names.
MAX_REQUESTS = 32
MAX_SUBREQUESTS = 8
_DNS_LABEL_MAX = 63
# The Configuration's limits (Kueue's validateDeviceClassMappings).
MAX_MAPPINGS = 16
MAX_CLASSES_PER_MAPPING = 8
CLAIMS_NOT_SUPPORTED = "KueueDRAIntegration feature does not support use of resource claims"


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    name: str
    device_class: str = ""
    allocation_mode: str = EXACT_COUNT
    count: int = 1
    admin_access: bool = False
    first_available: bool = False


@dataclass(slots=True)
class ClaimSpec:
    """A ResourceClaimSpec: the device requests Kueue counts."""

    requests: tuple[DeviceRequest, ...] = ()


@dataclass(slots=True)
class DraObject:
    """A DeviceClass, ResourceClaim or ResourceClaimTemplate: ``spec`` as written, ``claim`` read."""

    meta: ObjectMeta
    kind: str
    spec: dict[str, Any] = field(default_factory=dict)
    claim: ClaimSpec = field(default_factory=ClaimSpec)


def _is_dns_label(text: str) -> bool:
    return 0 < len(text) <= _DNS_LABEL_MAX and is_dns_subdomain(text) and "." not in text


def _read_exactly(r: Reader, name: str, errs: FieldErrors) -> DeviceRequest:
    device_class = r.string("deviceClassName")
    if not device_class:
        errs.required(r.at("deviceClassName"))
    elif not is_dns_subdomain(device_class):
        errs.invalid(r.at("deviceClassName"), device_class,
                     "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'")
    mode = r.enum("allocationMode", ALLOCATION_MODES, EXACT_COUNT)
    count = r.integer("count", None)
    if count is not None and mode == EXACT_COUNT and count <= 0:
        errs.invalid(r.at("count"), count, "must be greater than zero")
    if count is not None and mode == ALL:
        errs.invalid(r.at("count"), count, "must not be specified when allocationMode is 'All'")
    return DeviceRequest(name, device_class, mode, count if count is not None else 1,
                         r.boolean("adminAccess", False))


def read_claim_spec(r: Reader) -> ClaimSpec:
    """A ResourceClaimSpec at ``r`` (``spec`` of a claim, ``spec.spec`` of a template)."""
    errs = r.errors
    devices = r.child("devices")
    items = devices.items("requests")
    if len(items) > MAX_REQUESTS:
        errs.add(devices.at("requests"), f"Too many: {len(items)}: must have at most {MAX_REQUESTS} items")
    seen: set[str] = set()
    out: list[DeviceRequest] = []
    for item in items:
        name = item.string("name")
        if not name:
            errs.required(item.at("name"))
        elif not _is_dns_label(name):
            errs.invalid(item.at("name"), name, "a lowercase RFC 1123 label must consist of lower case alphanumeric "
                         "characters or '-', and must start and end with an alphanumeric character")
        elif name in seen:
            errs.add(item.at("name"), f'Duplicate value: "{name}"')
        seen.add(name)
        exactly, first = item.opt_child("exactly"), item.items("firstAvailable")
        if exactly is not None and first:
            errs.add(item.path, 'Invalid value: "{...}": exactly one of `exactly` or `firstAvailable` is required, '
                     "but multiple fields are set")
        elif exactly is None and not first:
            errs.add(item.path, 'Required value: exactly one of `exactly` or `firstAvailable` is required')
        if exactly is not None:
            out.append(_read_exactly(exactly, name, errs))
        else:
            if len(first) > MAX_SUBREQUESTS:
                errs.add(item.at("firstAvailable"), f"Too many: {len(first)}: must have at most {MAX_SUBREQUESTS} items")
            for sub in first:
                _read_exactly(sub, sub.string("name"), errs)
            out.append(DeviceRequest(name, first_available=True))
    return ClaimSpec(tuple(out))


def read_device_class(r: Reader, meta: ObjectMeta) -> DraObject:
    spec = r.child("spec")
    spec.items("selectors")
    spec.opt_string("extendedResourceName")
    raw = r.raw("spec")
    return DraObject(meta, "DeviceClass", dict(raw) if isinstance(raw, dict) else {})


def read_resource_claim(r: Reader, meta: ObjectMeta) -> DraObject:
    raw = r.raw("spec")
    return DraObject(meta, "ResourceClaim", dict(raw) if isinstance(raw, dict) else {}, read_claim_spec(r.child("spec")))


def read_resource_claim_template(r: Reader, meta: ObjectMeta) -> DraObject:
    raw = r.raw("spec")
    claim = read_claim_spec(r.child("spec").child("spec"))
    return DraObject(meta, "ResourceClaimTemplate", dict(raw) if isinstance(raw, dict) else {}, claim)


def validate_dra_object(obj: DraObject, errs: FieldErrors) -> None:
    validate_name(obj.meta, errs, namespaced=obj.kind != "DeviceClass")


def validate_dra_update(old: DraObject, new: DraObject, errs: FieldErrors) -> None:
    """A claim's and a template's spec are immutable (kube-apiserver's ValidateResourceClaimUpdate)."""
    if new.kind != "DeviceClass" and old.spec != new.spec:
        errs.add("spec", "Invalid value: field is immutable")


# --------------------------------------------------------------------------- quota


@dataclass(frozen=True, slots=True)
class DeviceClassMapping:
    """``resources.deviceClassMappings[]``: the quota resource ``name`` counts these classes' devices."""

    name: str
    device_class_names: tuple[str, ...]


def read_device_class_mappings(r: Reader) -> tuple[DeviceClassMapping, ...]:
    """``resources.deviceClassMappings`` of a Configuration, checked as Kueue checks it."""
    errs = r.errors
    items = r.items("deviceClassMappings")
    if len(items) > MAX_MAPPINGS:
        errs.add(r.at("deviceClassMappings"), f"Too many: {len(items)}: must have at most {MAX_MAPPINGS} items")
    out: list[DeviceClassMapping] = []
    names: set[str] = set()
    owner: dict[str, str] = {}
    for item in items:
        name = item.string("name")
        if not name:
            errs.required(item.at("name"))
        elif name in names:
            errs.add(item.at("name"), f'Duplicate value: "{name}"')
        names.add(name)
        if item.has("sources"):
            errs.add(item.at("sources"), "Unsupported value: mkhub counts devices only (counter and capacity "
                     "sources need ResourceSlices, which mkhub does not read)")
        classes = item.strings("deviceClassNames")
        if not classes:
            errs.required(item.at("deviceClassNames"))
        if len(classes) > MAX_CLASSES_PER_MAPPING:
            errs.add(item.at("deviceClassNames"),
                     f"Too many: {len(classes)}: must have at most {MAX_CLASSES_PER_MAPPING} items")
        for i, dc in enumerate(classes):
            path = f"{item.at('deviceClassNames')}[{i}]"
            if dc in classes[:i]:
                errs.add(path, f'Duplicate value: "{dc}"')
            elif dc in owner and owner[dc] != name:
                errs.invalid(path, dc, f"device class already mapped to resource {owner[dc]}")
            owner.setdefault(dc, name)
        out.append(DeviceClassMapping(name, tuple(classes)))
    return tuple(out)


ClaimLookup = Callable[[str, str, str], ClaimSpec | None]
"""(kind, namespace, name) -> the claim spec of a stored ResourceClaimTemplate/ResourceClaim, or None."""


def _count_devices(claim: ClaimSpec, path: str, template: str) -> tuple[dict[str, int], str]:
    """Devices per DeviceClass (Kueue's countDevicesPerClass), or the first unsupported request."""
    out: dict[str, int] = {}
    for i, req in enumerate(claim.requests):
        at = f"{path}.devices.requests[{i}]"
        if req.first_available:
            return {}, f"{at}: Invalid value: null: ResourceClaimTemplate {template}: FirstAvailable device selection is not supported"
        if req.admin_access:
            continue
        if req.allocation_mode == ALL:
            return {}, (f'{at}.exactly.allocationMode: Invalid value: "All": ResourceClaimTemplate {template}: '
                        "AllocationMode 'All' is not supported")
        if req.device_class:
            out[req.device_class] = out.get(req.device_class, 0) + req.count
    return out, ""


def pod_set_device_requests(
    index: int, pod_set: str, template: Mapping[str, Any], namespace: str,
    mappings: tuple[DeviceClassMapping, ...], lookup: ClaimLookup,
) -> tuple[dict[str, int], str]:
    """The quota resources one pod of pod set ``index`` takes through its resource claims, or
    Kueue's message for why the workload is inadmissible ("" when it is not)."""
    spec = template.get("spec") if isinstance(template.get("spec"), Mapping) else {}
    claims = spec.get("resourceClaims") if isinstance(spec, Mapping) else None
    if not isinstance(claims, list):
        return {}, ""
    mapped = {dc: m.name for m in mappings for dc in m.device_class_names}
    out: dict[str, int] = {}
    for j, prc in enumerate(claims):
        if not isinstance(prc, Mapping):
            continue
        if prc.get("resourceClaimName"):
            return {}, CLAIMS_NOT_SUPPORTED
        name = prc.get("resourceClaimTemplateName")
        if not isinstance(name, str) or not name:
            continue
        path = f"spec.podSets[{index}].template.spec.resourceClaims[{j}]"
        claim = lookup("ResourceClaimTemplate", namespace, name)
        if claim is None:
            return {}, (f"{path}: Internal error: failed to get claim spec for ResourceClaimTemplate {name} in podset "
                        f'{pod_set}: resourceclaimtemplates.resource.k8s.io "{name}" not found')
        counts, problem = _count_devices(claim, path, name)
        if problem:
            return {}, problem
        for dc, count in counts.items():
            resource = mapped.get(dc)
            if resource is None:
                return {}, (f'{path}.resourceClaimTemplateName: Not found: "DeviceClass {dc} is not mapped in DRA '
                            f'configuration for podset {pod_set}"')
            out[resource] = out.get(resource, 0) + count
    return out, ""


def has_resource_claims(template: Mapping[str, Any]) -> bool:
    spec = template.get("spec")
    return isinstance(spec, Mapping) and bool(spec.get("resourceClaims"))
