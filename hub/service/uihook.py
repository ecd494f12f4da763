"""What ``mkhub serve`` hands the web dashboard (hub/ui): the hub's parts, read-only.

The dashboard sits above the service layer (it reuses :mod:`hub.service.views`, as
``mkhub top`` and ``describe`` do), so serve does not import it: the CLI passes its
starter in :class:`hub.service.serve.ServeOptions`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from hub.controllers.hub_runtime import HubRuntime
from hub.federation.logrelay import LogRelay
from hub.store.interface import Store

from .views import WorkerLink


@dataclass(slots=True)
class UIContext:
    listen: str
    tokens_file: Path | None
    tls_dir: Path | None
    insecure: bool
    admin_identity: str | None
    # Filled once this replica leads and its engine is restored; until then the API answers 503.
    store: Store | None = None
    runtime: HubRuntime | None = None
    worker_link: Callable[[str], WorkerLink] | None = None
    logs: LogRelay | None = None
    metrics: Any = None  # hub.obs.metrics.DecisionMetrics
    dispatch: Any = None  # hub.obs.federation.DispatchObserver
    leader: Callable[[], str | None] = lambda: None  # a standby's view of who leads ("" unknown); None: we do


class UIServer(Protocol):
    def attach(self) -> None:
        """The context's hub parts are filled in: start following the store."""

    async def stop(self) -> None: ...


UIStarter = Callable[[UIContext], Awaitable[UIServer]]
