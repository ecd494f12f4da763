"""``mkhub serve --webhook-listen HOST:PORT``: Kueue's mutating webhooks for the kinds on the job
framework (``batch/v1`` Jobs, JobSets...).

An HTTPS endpoint per kind, at Kueue's path (``POST /mutate-batch-v1-job``,
``/mutate-jobset-x-k8s-io-v1alpha2-jobset``...), taking an ``AdmissionReview``
(``admission.k8s.io/v1``) and answering with the same kind, as an API server's
admission chain expects. For an object Kueue manages (its framework among the hub
Configuration's ``integrations.frameworks``, its namespace selected by
``managedJobsNamespaceSelector``, and a ``kueue.x-k8s.io/queue-name`` label or
``manageJobsWithoutQueueName``: :mod:`hub.api.jobkinds.management`), as Kueue's Job
webhook does:

- the queue name must be a valid LocalQueue name (an RFC 1123 subdomain); otherwise
  ``allowed: false`` with a message naming ``metadata.labels[kueue.x-k8s.io/queue-name]``;
- ``spec.managedBy: kueue.x-k8s.io/multikueue`` when the object's LocalQueue points at
  a ClusterQueue with an AdmissionCheck of controller ``kueue.x-k8s.io/multikueue``
  and the object names no manager itself, or its kind's own controller
  (``kubernetes.io/job-controller``, ``jobset.sigs.k8s.io/jobset-controller``);
- ``spec.suspend: true``, so the Job cannot start before its Workload is admitted.

Kueue's pod webhook (``/mutate--v1-pod``, the ``pod`` framework enabled): a Pod it manages
(:func:`hub.api.jobkinds.pod.manages_pod`; not one a managed Job or JobSet controls) gets the
managed label and finalizer, the ``kueue.x-k8s.io/admission`` scheduling gate and the role hash;
a Pod Kueue's validation refuses (queue name, pod group metadata, and on update the immutable
labels: :func:`hub.api.jobkinds.pod.validate_pod`) is refused, on create and on update.

Kueue's Deployment and StatefulSet webhooks (``/mutate-apps-v1-deployment``,
``/mutate-apps-v1-statefulset``; their validation folded into the same review): a managed one's pod
template is marked so its Pods are gated and queued (:mod:`hub.api.jobkinds.serving`); a Pod with
the ``kueue.x-k8s.io/pod-suspending-parent`` annotation is gated whatever its queue and namespace.
Kueue's LeaderWorkerSet webhook (``/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset``) marks the
leader and worker templates likewise; the pod webhook names each such Pod's group from its group
index (:mod:`hub.api.jobkinds.leaderworkerset`): a Workload per group.

The mutations go back as a base64 JSONPatch (RFC 6902). Lookups read the hub's
store (the Kubernetes store's cache): a LocalQueue not yet known is not an error
(the Job waits for it, as in Kueue). The webhook speaks TLS with the hub's
certificate of ``mkhub certs`` (``DIR/hub.crt``); the API server checks it against
the ``caBundle`` of the MutatingWebhookConfiguration (``manifests/base/webhook.yaml``).
"""

from __future__ import annotations

import base64
import logging
import re
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hub.api import fastjson
from hub.api.config import Configuration
from hub.api.errors import ValidationError
from hub.api.jobkinds import ADAPTERS, POD, JobAdapter, adapter_of_kind, owner_managed
from hub.api.jobkinds import leaderworkerset as lws
from hub.api.jobkinds.framework import get_path, group_of, json_patch_set, suspend_path
from hub.api.jobkinds.management import manages
from hub.api.jobkinds.pod import default_at_creation, json_patch, manages_pod, read_pod, validate_pod
from hub.api.jobkinds.serving import (
    DEPLOYMENT,
    STATEFULSET,
    manages_pod_of,
    parent_framework,
    statefulset_owner,
    with_current_total_count,
)
from hub.api.jobkinds.serving import default as serving_default
from hub.api.jobkinds.serving import managed as serving_managed
from hub.api.jobkinds.serving import validate as serving_validate
from hub.federation import tls
from hub.store.interface import Object

from .webhook_http import WebhookServer

log = logging.getLogger("mkhub.webhook")



def webhook_path(adapter: JobAdapter[Any]) -> str:
    """Kueue's path for a kind's mutating webhook: ``/mutate-<group with dashes>-<version>-<kind>``."""
    group, _, version = adapter.api_version.rpartition("/")
    return f"/mutate-{group.replace('.', '-')}-{version}-{adapter.kind.lower()}"


PATH = webhook_path(ADAPTERS["batch/job"])
# Kueue's Deployment and StatefulSet webhooks (apps/v1): not job-framework kinds, by kind name.
SERVING_PATHS = {"Deployment": "/mutate-apps-v1-deployment", "StatefulSet": "/mutate-apps-v1-statefulset"}
OTHER_PATHS = (*SERVING_PATHS.values(), lws.WEBHOOK_PATH)  # paths of kinds not on the job framework
_SERVING_FRAMEWORK = {"Deployment": DEPLOYMENT, "StatefulSet": STATEFULSET}
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation "
    "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)

Getter = Callable[[str, str, str], Object | None]  # (kind, namespace, name) -> stored object


class ReviewError(ValueError):
    """A request that is no AdmissionReview v1 (answered with HTTP 400)."""


def uses_multikueue(get: Getter, namespace: str, queue: str) -> bool:
    """The LocalQueue's ClusterQueue has a MultiKueue AdmissionCheck (Kueue's
    ``ApplyDefaultForManagedBy`` -> ``IsMultiKueueEnabled`` for the queue)."""
    lq = get("LocalQueue", namespace, queue)
    if lq is None:
        return False
    cq = get("ClusterQueue", "", str((lq.get("spec") or {}).get("clusterQueue") or ""))
    if cq is None:
        return False
    spec = cq.get("spec") or {}
    names = [str(n) for n in spec.get("admissionChecks") or []]
    strategy = spec.get("admissionChecksStrategy") or {}
    names += [str(r.get("name")) for r in strategy.get("admissionChecks") or [] if isinstance(r, dict)]
    for name in names:
        ac = get("AdmissionCheck", "", name)
        if ac is not None and (ac.get("spec") or {}).get("controllerName") == MULTIKUEUE_CONTROLLER:
            return True
    return False


def queue_name_error(queue: str) -> str | None:
    if len(queue) > 253 or not _DNS_SUBDOMAIN.match(queue):
        return f'metadata.labels[{QUEUE_NAME_LABEL}]: Invalid value: "{queue}": {_SUBDOMAIN_MESSAGE}'
    return None


def mutate(
    job: Object, get: Getter, config: Configuration | None = None, adapter: JobAdapter[Any] | None = None
) -> tuple[list[dict[str, Any]], str | None]:
    """The JSONPatch for an object being created (a Job unless ``adapter`` says), or a refusal message."""
    config = config or Configuration()
    adapter = adapter or ADAPTERS["batch/job"]
    meta = job.get("metadata") or {}
    queue = str((meta.get("labels") or {}).get(QUEUE_NAME_LABEL) or "")
    namespace = str(meta.get("namespace") or "")
    ns = get("Namespace", "", namespace) if namespace else None
    ns_labels = ((ns or {}).get("metadata") or {}).get("labels")
    owners = [r for r in meta.get("ownerReferences") or [] if isinstance(r, dict)]
    if owner_managed(config, owners) or not manages(config, adapter.framework, queue, namespace, ns_labels):
        # Not Kueue's: controlled by an object Kueue manages (a JobSet's Job), no queue name, a namespace
        # not selected, or its framework not enabled.
        return [], None
    refused = queue_name_error(queue) if queue else None
    if refused is not None:
        return [], refused
    spec = job.get("spec")
    patch: list[dict[str, Any]] = []
    if not isinstance(spec, dict):
        patch.append({"op": "add", "path": "/spec", "value": {}})
        spec = {}
    body = {"spec": spec}  # as patched so far: a nested path (runPolicy) is made once
    current = get_path(body, adapter.managed_by_path) if adapter.managed_by_path else MULTIKUEUE_CONTROLLER
    # Kueue's CanDefaultManagedBy: no manager named, or the kind's own controller named.
    if queue and current in (None, "", adapter.controller_name) and uses_multikueue(get, namespace, queue):
        patch += json_patch_set(body, adapter.managed_by_path, MULTIKUEUE_CONTROLLER)
        _set_copied(body, adapter.managed_by_path, MULTIKUEUE_CONTROLLER)
    if get_path(body, suspend_path(adapter)) is not True:
        patch += json_patch_set(body, suspend_path(adapter), True)
    # A kind's own defaults from Kueue's webhook (a TrainJob's runtime patch entry for Kueue).
    for path, value in getattr(adapter, "webhook_defaults", lambda _: [])(body):
        patch += json_patch_set(body, path, value)
    return patch, None


def _set_copied(body: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    """Set ``path`` in ``body``, copying each map on the way first: the rest of the request's object
    (the pod template) is shared, not copied on every create."""
    node = body
    for step in path[:-1]:
        child = node.get(step)
        node[step] = child = dict(child) if isinstance(child, dict) else {}
        node = child
    node[path[-1]] = value


def mutate_pod(
    pod: Object, get: Getter, config: Configuration, old: Object | None = None
) -> tuple[list[dict[str, Any]], str | None]:
    """Kueue's pod webhook for a Pod being created (``old`` None) or updated: the JSONPatch of its
    defaults (a managed Pod being created), or a refusal message."""
    # A LeaderWorkerSet's Pod gets its group (from its group index) before Kueue's checks see it.
    grouped = lws.group_defaults(pod, lambda ns, name: _uid(get("LeaderWorkerSet", ns, name))) if old is None else pod
    if old is None:  # a StatefulSet's Pod: its group's count from the set's current replicas (kubectl scale)
        grouped = with_current_total_count(grouped, _statefulset_of(grouped, get))
    refused = validate_pod(grouped, old)
    if refused is not None:
        return [], refused.message
    if old is not None:
        return [], None
    meta = pod.get("metadata")
    if isinstance(meta, dict) and not meta.get("name") and meta.get("generateName"):
        # The API server names a generateName Pod (a ReplicaSet's) after admission: read it by its prefix.
        pod = {**pod, "metadata": {**meta, "name": str(meta["generateName"])}}
        grouped = {**grouped, "metadata": {**grouped["metadata"], "name": str(meta["generateName"])}}
    try:
        typed = read_pod(grouped)
    except ValidationError as exc:
        return [], exc.message
    if parent_framework(typed.meta.annotations) is not None:
        # Kueue's SuspendedByParentAnnotation: the parent's webhook decided, no queue or namespace rule here.
        if not manages_pod_of(config, typed.meta.annotations):
            return [], None
    else:
        namespace = typed.meta.namespace
        ns = get("Namespace", "", namespace) if namespace else None
        ns_labels = ((ns or {}).get("metadata") or {}).get("labels") if ns is not None else None
        if not manages_pod(config, typed, ns_labels, owner_managed(config, typed.meta.owner_references)):
            return [], None
    return json_patch(pod, default_at_creation(grouped)), None


def _statefulset_of(pod: Object, get: Getter) -> Object | None:
    name = statefulset_owner(pod)
    namespace = str((pod.get("metadata") or {}).get("namespace") or "")
    return get("StatefulSet", namespace, name) if name is not None and namespace else None


def _uid(obj: Object | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("uid") or "")


def mutate_leaderworkerset(
    obj: Object, get: Getter, config: Configuration, old: Object | None = None
) -> tuple[list[dict[str, Any]], str | None]:
    """Kueue's LeaderWorkerSet webhook (create, or update from ``old``): a refusal message, or the
    JSONPatch marking the leader and worker templates of one Kueue manages
    (:mod:`hub.api.jobkinds.leaderworkerset`)."""
    namespace = str((obj.get("metadata") or {}).get("namespace") or "")
    ns = get("Namespace", "", namespace) if namespace else None
    ns_labels = ((ns or {}).get("metadata") or {}).get("labels") if ns is not None else None
    is_managed = lws.managed(config, obj, ns_labels)
    refused = lws.validate(obj, old, is_managed)
    if refused is not None:
        return [], refused.message
    if not is_managed:
        return [], None
    return json_patch(obj, lws.default(obj)), None


def mutate_serving(
    obj: Object, kind: str, get: Getter, config: Configuration, old: Object | None = None
) -> tuple[list[dict[str, Any]], str | None]:
    """Kueue's Deployment or StatefulSet webhook (create, or update from ``old``): a refusal message,
    or the JSONPatch marking the pod template of one Kueue manages (:mod:`hub.api.jobkinds.serving`)."""
    framework = _SERVING_FRAMEWORK[kind]
    namespace = str((obj.get("metadata") or {}).get("namespace") or "")
    ns = get("Namespace", "", namespace) if namespace else None
    ns_labels = ((ns or {}).get("metadata") or {}).get("labels") if ns is not None else None
    is_managed = serving_managed(config, framework, obj, ns_labels)
    refused = serving_validate(framework, obj, old, is_managed)
    if refused is not None:
        return [], refused.message
    if not is_managed:
        return [], None
    return json_patch(obj, serving_default(framework, obj)), None


def review(body: Any, get: Getter, config: Configuration | None = None) -> dict[str, Any]:
    """An AdmissionReview v1 request in, its response out."""
    if not isinstance(body, dict) or body.get("kind") != "AdmissionReview" or not isinstance(body.get("request"), dict):
        raise ReviewError("expected an AdmissionReview (admission.k8s.io/v1) with a request")
    if body.get("apiVersion") != "admission.k8s.io/v1":
        raise ReviewError(f"AdmissionReview apiVersion {body.get('apiVersion')!r}: only admission.k8s.io/v1 is served")
    request = body["request"]
    uid = str(request.get("uid") or "")
    if not uid:
        raise ReviewError("AdmissionReview request.uid is required")
    response: dict[str, Any] = {"uid": uid, "allowed": True}
    kind = request.get("kind") or {}
    obj = request.get("object")
    adapter = adapter_of_kind(str(kind.get("kind") or ""))
    if adapter is not None and group_of(adapter.api_version) != kind.get("group"):
        adapter = None
    create_or_update = request.get("operation") in ("CREATE", "UPDATE")
    is_pod = kind.get("kind") == POD.kind and not kind.get("group") and create_or_update
    serving = str(kind.get("kind")) if kind.get("group") == "apps" and kind.get("kind") in SERVING_PATHS \
        and create_or_update else None
    is_lws = kind.get("group") == lws.GROUP and kind.get("kind") == lws.KIND and create_or_update
    if (is_pod or serving or is_lws or (adapter is not None and request.get("operation") == "CREATE")) and isinstance(obj, dict):
        if not isinstance(obj.get("metadata") or {}, dict):
            message = f'{kind.get("kind")} "{request.get("name") or "<unnamed>"}" is invalid: metadata: must be an object'
            return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {
                "uid": uid, "allowed": False,
                "status": {"code": 400, "reason": "BadRequest", "message": message, "metadata": {}, "status": "Failure"}}}
        if not (obj.get("metadata") or {}).get("namespace") and request.get("namespace"):
            obj = {**obj, "metadata": {**(obj.get("metadata") or {}), "namespace": request["namespace"]}}
        old = request.get("oldObject") if request.get("operation") == "UPDATE" else None
        old = old if isinstance(old, dict) else None
        if serving:
            patch, refused = mutate_serving(obj, serving, get, config or Configuration(), old)
        elif is_lws:
            patch, refused = mutate_leaderworkerset(obj, get, config or Configuration(), old)
        elif is_pod:
            patch, refused = mutate_pod(obj, get, config or Configuration(), old)
        else:
            patch, refused = mutate(obj, get, config, adapter)
        if refused is not None:
            response = {"uid": uid, "allowed": False,
                        "status": {"code": 403, "reason": "Forbidden", "message": refused, "metadata": {}, "status": "Failure"}}
            log.info("refused %s %s/%s: %s", kind.get("kind"), request.get("namespace", ""), request.get("name") or "", refused)
        elif patch:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(fastjson.dumps(patch).encode()).decode()
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


class Webhook:
    """The HTTPS server of the webhooks (:mod:`hub.service.webhook_http`): one POST route per kind."""

    def __init__(self, get: Getter, config: Configuration | None = None) -> None:
        self.get = get
        self.config = config or Configuration()
        self.server: WebhookServer | None = None

    def answer(self, raw: bytes) -> tuple[int, bytes]:
        # Called on every create the API server admits: decoded and encoded with the fast JSON library.
        try:
            body = fastjson.loads(raw.decode())
        except ValueError:  # also UnicodeDecodeError
            return 400, fastjson.dumps({"error": "the body is not JSON"}).encode()
        try:
            reviewed = review(body, self.get, self.config)
        except ReviewError as exc:
            return 400, fastjson.dumps({"error": str(exc)}).encode()
        return 200, fastjson.dumps(reviewed).encode()

    async def start(self, host: str, port: int, context: ssl.SSLContext | None) -> int:
        paths = (*(webhook_path(a) for a in ADAPTERS.values()), *OTHER_PATHS)
        self.server = WebhookServer(dict.fromkeys(paths, self.answer))
        return await self.server.start(host, port, context)

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop()
            self.server = None


def webhook_configuration(port: int, certs: Path) -> dict[str, Any]:
    """manifests/base/webhook.yaml with the hub's address as ``clientConfig.url`` (a dev-cluster
    has no Services to route to) and the CA of ``mkhub certs`` as ``caBundle``."""
    ca = base64.b64encode((certs / "ca.crt").read_bytes()).decode()
    return {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "mkhub-job-webhook"},
        "webhooks": [{
            "name": "mjob.kb.io", "admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": "Fail",
            "timeoutSeconds": 10,
            "clientConfig": {"url": f"https://127.0.0.1:{port}/mutate-batch-v1-job", "caBundle": ca},
            "rules": [{"apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["jobs"],
                       "scope": "Namespaced"}],
            "objectSelector": {"matchExpressions": [{"key": "kueue.x-k8s.io/queue-name", "operator": "Exists"}]},
        }],
    }


def server_context(tls_dir: Path) -> ssl.SSLContext:
    """TLS with the hub's certificate; no client certificate (an API server sends none)."""
    paths = tls.cert_paths(tls_dir)
    missing = [str(p) for p in (paths.hub_crt, paths.hub_key) if not p.exists()]
    if missing:
        raise FileNotFoundError(f"--webhook-listen needs {', '.join(missing)}; create them with: mkhub certs --out {tls_dir}")
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(str(paths.hub_crt), str(paths.hub_key))
    return ctx


async def start_webhook(get: Getter, address: str, tls_dir: Path | None, config: Configuration | None = None) -> Webhook:
    """Serve the webhook on ``address`` (HTTPS, always: API servers call webhooks over TLS only)."""
    host, sep, port_text = address.rpartition(":")
    if not sep or not port_text.isdigit():
        raise ValueError(f"--webhook-listen {address!r}: expected HOST:PORT")
    host, port = host.strip("[]") or "0.0.0.0", int(port_text)
    if tls_dir is None:
        raise ValueError("--webhook-listen needs --webhook-tls-dir DIR or --tls-dir DIR (the hub's certificate from mkhub certs)")
    hook = Webhook(get, config)
    bound = await hook.start(host, port, server_context(tls_dir))
    log.info("webhooks listening on https://%s:%d (%s)", host, bound, ", ".join([*(webhook_path(a) for a in ADAPTERS.values()), *OTHER_PATHS]))
    return hook
