"""The Kubernetes REST API over any :class:`~hub.store.interface.Store` (what kubectl and client-go speak).

Modules by job: :mod:`.resources` (what is served), :mod:`.discovery`, :mod:`.server`
(routing, media types, the aiohttp server), :mod:`.reads` (get, list, selectors,
pagination), :mod:`.writes` (create, update, patch, delete), :mod:`.patch`,
:mod:`.managed` (managedFields, server-side apply), :mod:`.watch`, :mod:`.tables`,
:mod:`.fields` (fieldValidation), :mod:`.errors` (metav1.Status), :mod:`.auth`,
:mod:`.protobuf` (kubectl's protobuf Namespace bodies), :mod:`.openapi` (the OpenAPI documents),
:mod:`.crds` (the kinds CustomResourceDefinitions serve), :mod:`.structural` (their schemas: defaults, validation).
"""

from .auth import Authorizer, server_ssl_context
from .server import KubeAPI
from .writes import Admission

__all__ = ["Admission", "Authorizer", "KubeAPI", "server_ssl_context"]
