"""``metav1.Status`` errors, with the codes, reasons and messages the API server uses."""

from __future__ import annotations

from typing import Any

from hub.api.errors import FieldError, ValidationError

from .resources import Resource

Status = dict[str, Any]


class ApiError(Exception):
    """An error the API answers with a ``metav1.Status`` body."""

    def __init__(
        self, code: int, reason: str, message: str, details: dict[str, Any] | None = None, list_meta: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.list_meta = list_meta  # e.g. the fresh continue token of an expired one

    def status(self) -> Status:
        body: Status = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": dict(self.list_meta or {}),
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def _details(res: Resource, name: str, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name} if name else {}
    if res.group:
        out["group"] = res.group
    out["kind"] = res.plural
    out.update(extra)
    return out


def not_found(res: Resource, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{res.group_resource} "{name}" not found', _details(res, name))


def already_exists(res: Resource, name: str) -> ApiError:
    return ApiError(409, "AlreadyExists", f'{res.group_resource} "{name}" already exists', _details(res, name))


def conflict(res: Resource, name: str, why: str = "") -> ApiError:
    why = why or "the object has been modified; please apply your changes to the latest version and try again"
    return ApiError(409, "Conflict", f'Operation cannot be fulfilled on {res.group_resource} "{name}": {why}', _details(res, name))


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def too_large(limit: int) -> ApiError:
    return ApiError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")


def forbidden(res: Resource | None, user: str, verb: str, namespace: str, why: str = "") -> ApiError:
    if res is None:
        return ApiError(403, "Forbidden", f'forbidden: User "{user}" cannot {verb} path', {})
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    message = (
        f'{res.group_resource} is forbidden: User "{user}" cannot {verb} resource "{res.plural}" '
        f'in API group "{res.group}" {scope}'
    )
    if why:
        message += f": {why}"
    return ApiError(403, "Forbidden", message, _details(res, ""))


def forbidden_object(res: Resource, name: str, why: str) -> ApiError:
    return ApiError(403, "Forbidden", f'{res.group_resource} "{name}" is forbidden: {why}', _details(res, name))


def method_not_allowed() -> ApiError:
    return ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")


def unsupported_media_type(content_type: str) -> ApiError:
    return ApiError(415, "UnsupportedMediaType", f'the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (got "{content_type}")')


def not_acceptable(accept: str) -> ApiError:
    return ApiError(406, "NotAcceptable", f'only the following media types are accepted: application/json, application/yaml (got "{accept}")')


def expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def page_not_found() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def _cause(err: FieldError) -> dict[str, str]:
    if err.has_value:
        reason = "FieldValueInvalid"
        text = str(err).split(": ", 1)[1]
    elif err.reason == "Required value":
        reason, text = "FieldValueRequired", err.reason
    elif err.reason.startswith("Duplicate value"):
        reason, text = "FieldValueDuplicate", err.reason
    elif err.reason.startswith("Unsupported value"):
        reason, text = "FieldValueNotSupported", err.reason
    elif err.reason.startswith("Forbidden"):
        reason, text = "FieldValueForbidden", err.reason
    else:
        reason, text = "FieldValueInvalid", err.reason
    return {"reason": reason, "message": text, "field": err.path}


def invalid(res: Resource, name: str, errors: list[FieldError]) -> ApiError:
    """422 Invalid with one ``causes[]`` entry per field error (mkhub's messages)."""
    parts = [str(e) for e in errors] or ["invalid"]
    listed = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    details: dict[str, Any] = {"name": name, "kind": res.kind, "causes": [_cause(e) for e in errors]}
    if res.group:
        details["group"] = res.group
    return ApiError(422, "Invalid", f'{res.qualified_kind} "{name}" is invalid: {listed}', details)


def from_validation(res: Resource, name: str, exc: ValidationError) -> ApiError:
    return invalid(res, exc.name if exc.name and exc.name != "<unnamed>" else name, list(exc.errors))


def success(res: Resource, name: str, uid: str) -> Status:
    """What DELETE answers once an object is gone (the API server's Status for an immediate delete
    of a kind that answers Status; Kueue kinds and built-ins answer the object instead)."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": _details(res, name, uid=uid),
    }
