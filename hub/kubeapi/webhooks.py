"""Admission webhooks, as an API server calls them (``admissionregistration.k8s.io/v1``).

``mkhub dev-cluster`` stores ``MutatingWebhookConfiguration`` and
``ValidatingWebhookConfiguration`` objects and, on a create or update they match,
calls their webhooks as the API server's admission phases do: the mutating ones
first, before validation, each on the object the previous one left; the validating
ones after validation, on the final object, any of them able to refuse the write
(their patches are ignored):

- matching: ``rules`` (``apiGroups``, ``apiVersions``, ``operations`` CREATE and UPDATE,
  ``resources`` with subresources as ``jobs/status``, ``*`` and ``*/*`` wildcards,
  ``scope``), ``namespaceSelector`` and ``objectSelector`` (``matchLabels`` and
  ``matchExpressions``; on an update, the old object's labels match too);
- the call: ``POST`` of an ``AdmissionReview`` v1 to ``clientConfig.url`` over
  HTTPS, the server checked against ``clientConfig.caBundle``, within
  ``timeoutSeconds`` (default 10);
- the answer: ``allowed: false`` refuses the write with the webhook's status
  (``admission webhook "NAME" denied the request: MESSAGE``); a ``JSONPatch`` is
  applied to the object; a webhook that cannot be reached refuses the write
  (``failurePolicy: Fail``, the default) or is skipped (``Ignore``).

Not done: ``clientConfig.service`` (there are no Services to route to: treated as
unreachable), ``matchConditions``, reinvocation, DELETE and CONNECT operations.
"""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import threading
import urllib.parse
import uuid
from collections.abc import Mapping
from typing import Any

from hub.api import fastjson
from hub.store.interface import Object, Store
from hub.store.sqlite import SQLiteStore
from hub.store.sqlite_reads import KindReads
from hub.store.sqlite_watch import change_stamp

from .errors import ApiError
from .patch import json_patch
from .resources import Resource

MUTATING = "MutatingWebhookConfiguration"
VALIDATING = "ValidatingWebhookConfiguration"
KIND = MUTATING
DEFAULT_TIMEOUT = 10


def _matches_list(values: Any, value: str) -> bool:
    return isinstance(values, list) and ("*" in values or value in values)


def _resource_matches(patterns: Any, plural: str, subresource: str) -> bool:
    """As the API server: ``*`` is every resource but no subresource, ``*/*`` everything,
    ``jobs/*`` every subresource of jobs, ``*/status`` every status subresource."""
    if not isinstance(patterns, list):
        return False
    for pattern in patterns:
        want, _, want_sub = str(pattern).partition("/")
        if want not in ("*", plural):
            continue
        if want_sub == subresource or (want_sub == "*" and (subresource or want == "*")):
            return True
    return False


def rule_matches(rule: Mapping[str, Any], res: Resource, version: str, operation: str, subresource: str = "") -> bool:
    scope = rule.get("scope") or "*"
    if scope != "*" and scope != ("Namespaced" if res.namespaced else "Cluster"):
        return False
    return (
        _matches_list(rule.get("apiGroups"), res.group)
        and _matches_list(rule.get("apiVersions"), version)
        and _matches_list(rule.get("operations"), operation)
        and _resource_matches(rule.get("resources"), res.plural, subresource)
    )


def selector_matches(selector: Any, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector; an absent or empty selector matches everything."""
    if not isinstance(selector, dict):
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), list(expr.get("values") or [])
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def _denied(name: str, status: Mapping[str, Any]) -> ApiError:
    """The webhook's status, its message prefixed as kube-apiserver does (code 403 when it gives none)."""
    code = int(status.get("code") or 403)
    given_reason = str(status.get("reason") or "")
    reason = given_reason or ("InternalError" if code == 500 else "Forbidden")
    denied = f'admission webhook "{name}" denied the request'
    if status.get("message"):
        message = f"{denied}: {status['message']}"
    elif given_reason:
        message = f"{denied}: {given_reason}"
    else:
        message = f"{denied} without explanation"
    return ApiError(code, reason, message)


def _failed(name: str, why: str) -> ApiError:
    return ApiError(500, "InternalError", f'Internal error occurred: failed calling webhook "{name}": {why}')


def _labels(obj: Object | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("labels") or {})


class WebhookCaller:
    """Calls the webhooks of the stored Mutating- (or Validating-) WebhookConfigurations for a
    create (``old`` None) or an update; returns the object as the mutating webhooks left it."""

    def __init__(self, store: Store, kind: str = MUTATING) -> None:
        self.store = store
        self.kind = kind
        self._cached: tuple[int, list[Object]] | None = None  # (change stamp, configurations): read only
        self.connections = WebhookConnections()
        self._shapes: dict[tuple[str, str, bool, str, str, str], bool] = {}  # may_call's answers
        self._shapes_of: list[Object] | None = None  # for these configurations
        # The labels namespaceSelectors match: kept until a Namespace changes (a SELECT and a decoding per call).
        self._namespaces = KindReads(store, "Namespace")

    def configured(self) -> bool:
        return bool(self._configs())

    def may_call(self, res: Resource, version: str, operation: str, subresource: str = "") -> bool:
        """Whether a stored webhook's rules name such a request (its selectors not asked): one none
        names calls no webhook. Kept per request shape until a configuration changes."""
        if res.kind in (MUTATING, VALIDATING):
            return False
        configs = self._configs()
        if configs is not self._shapes_of:
            self._shapes, self._shapes_of = {}, configs
        shape = (res.group, res.plural, res.namespaced, version, operation, subresource)
        named = self._shapes.get(shape)
        if named is None:
            named = self._shapes[shape] = any(
                rule_matches(rule, res, version, operation, subresource)
                for config in configs for hook in config.get("webhooks") or [] for rule in hook.get("rules") or []
            )
        return named

    def _configs(self) -> list[Object]:
        """The stored configurations; over a SQLite store listed again only after one changed (every
        write asks, twice: the lists were a twentieth of the dev-cluster's CPU)."""
        stamp = change_stamp(self.store, self.kind) if isinstance(self.store, SQLiteStore) else None
        cached = self._cached
        if stamp is not None and cached is not None and cached[0] == stamp:
            return cached[1]
        configs, _ = self.store.list(self.kind)
        if stamp is not None:
            self._cached = (stamp, configs)
        return configs

    def __call__(
        self, res: Resource, version: str, obj: Object, user: str = "", *, old: Object | None = None,
        subresource: str = "",
    ) -> Object:
        if res.kind in (MUTATING, VALIDATING):
            return obj  # as the API server: webhook configurations are never sent to webhooks
        configs = self._configs()
        if not configs:
            return obj
        operation = "CREATE" if old is None else "UPDATE"
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace") or "")
        ns_labels: dict[str, str] = {}
        if res.namespaced and namespace:
            ns_labels = _labels(self._namespaces.get("", namespace))  # a copy: the read is shared
            ns_labels.setdefault("kubernetes.io/metadata.name", namespace)
        for config in sorted(configs, key=lambda c: str(c["metadata"]["name"])):
            for hook in config.get("webhooks") or []:
                if not any(rule_matches(r, res, version, operation, subresource) for r in hook.get("rules") or []):
                    continue
                if res.namespaced and not selector_matches(hook.get("namespaceSelector"), ns_labels):
                    continue
                # An update is sent when the new or the old object matches the objectSelector.
                selector = hook.get("objectSelector")
                if not (selector_matches(selector, _labels(obj)) or (old is not None and selector_matches(selector, _labels(old)))):
                    continue
                patched = self._call(hook, res, version, obj, user, old, subresource)
                if self.kind == MUTATING:
                    obj = patched
        return obj

    def _call(
        self, hook: Mapping[str, Any], res: Resource, version: str, obj: Object, user: str, old: Object | None,
        subresource: str,
    ) -> Object:
        name = str(hook.get("name") or "")
        meta = obj.get("metadata") or {}
        uid = str(uuid.uuid4())
        operation = "CREATE" if old is None else "UPDATE"
        gvk = {"group": res.group, "version": version, "kind": res.kind}
        gvr = {"group": res.group, "version": version, "resource": res.plural}
        request: dict[str, Any] = {
            "uid": uid, "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
            "name": meta.get("name", ""), "namespace": meta.get("namespace", ""), "operation": operation,
            "userInfo": {"username": user or "system:anonymous"}, "object": obj, "oldObject": old,
            "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions" if old is None else "UpdateOptions"},
        }
        if subresource:
            request["subResource"] = request["requestSubResource"] = subresource
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
        try:
            answer = self._post(hook, review)
        except ApiError:
            raise
        except (OSError, ValueError, ssl.SSLError) as exc:
            if hook.get("failurePolicy", "Fail") == "Ignore":
                return obj
            raise _failed(name, f"failed to call webhook: {exc}") from None
        response = answer.get("response") if isinstance(answer, dict) else None
        if not isinstance(response, dict) or response.get("uid") != uid:
            if hook.get("failurePolicy", "Fail") == "Ignore":
                return obj
            raise _failed(name, "the webhook's AdmissionReview response has no response with the request's uid")
        if not response.get("allowed"):
            raise _denied(name, response.get("status") or {})
        if self.kind == VALIDATING:
            return obj  # a validating webhook only allows or refuses
        patch = response.get("patch")
        if patch:
            if response.get("patchType") != "JSONPatch":
                raise _failed(name, f"unsupported patchType {response.get('patchType')!r}")
            try:
                ops = json.loads(base64.b64decode(str(patch)))
                patched = json_patch(obj, ops)
            except (ValueError, ApiError) as exc:
                raise _failed(name, f"the webhook's patch does not apply: {exc}") from None
            if not isinstance(patched, dict):
                raise _failed(name, "the webhook's patch did not leave an object")
            return patched
        return obj

    def _post(self, hook: Mapping[str, Any], review: Object) -> Any:
        client = hook.get("clientConfig") or {}
        url = client.get("url")
        if not url:
            raise OSError("clientConfig.service is not routable in mkhub dev-cluster: give clientConfig.url")
        if not str(url).startswith("https://"):
            raise ValueError(f"clientConfig.url {url!r}: webhooks are called over HTTPS only")
        timeout = int(hook.get("timeoutSeconds") or DEFAULT_TIMEOUT)
        return self.connections.post(str(url), str(client.get("caBundle") or ""), fastjson.dumps(review).encode(), timeout)


class WebhookConnections:
    """Kept HTTPS connections to webhooks, as kube-apiserver keeps its webhook clients' connections
    alive: a TLS handshake per call (a fresh context, the CA parsed again, a new socket) cost the
    dev-cluster and the webhook's server several ms of CPU per write. Keyed by the server and the
    caBundle, so a changed bundle is checked afresh; safe for the API server's writer threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._contexts: dict[str, ssl.SSLContext] = {}
        self._idle: dict[tuple[str, int, str], list[http.client.HTTPSConnection]] = {}

    def _context(self, bundle: str) -> ssl.SSLContext:
        with self._lock:
            ctx = self._contexts.get(bundle)
            if ctx is None:
                ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
                if bundle:
                    ctx.load_verify_locations(cadata=base64.b64decode(bundle).decode())
                self._contexts[bundle] = ctx
            return ctx

    def post(self, url: str, bundle: str, body: bytes, timeout: float) -> Any:
        parts = urllib.parse.urlsplit(url)
        host, port = parts.hostname or "", parts.port or 443
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        key = (host, port, bundle)
        with self._lock:
            idle = self._idle.get(key)
            conn = idle.pop() if idle else None
        # A kept connection the webhook's server has since closed fails before any answer: once more on
        # a new one, as Go's transport retries on a reused connection (a review has no side effects).
        for kept in ((True, False) if conn is not None else (False,)):
            if not kept:
                conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=self._context(bundle))
            assert conn is not None
            try:
                if conn.sock is not None:
                    conn.sock.settimeout(timeout)
                conn.request("POST", target, body, {"Content-Type": "application/json", "Accept": "application/json"})
                resp = conn.getresponse()
                data = resp.read()
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                if kept and not isinstance(exc, TimeoutError):  # closed while idle (EOF, reset, TLS close)
                    continue
                raise OSError(str(exc) or type(exc).__name__) from None
            if resp.status >= 400:
                conn.close()
                raise OSError(f"HTTP {resp.status} {resp.reason}")
            if resp.will_close:
                conn.close()
            else:
                with self._lock:
                    self._idle.setdefault(key, []).append(conn)
            return fastjson.loads(data.decode())
        raise OSError("no connection")  # unreachable: the last attempt returns or raises
