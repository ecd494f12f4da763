"""The hub's Events written with a rate limit of their own, as Kueue's are.

controller-runtime gives a manager's event recorder a client of its own, made from the
same configuration: the same QPS and burst, another token bucket. So a burst of Events
never waits behind the controllers' writes, nor they behind it. :func:`records_view` is
the Kubernetes store with such a transport, for the hub's Event sender
(:mod:`hub.obs.event_sender`); Events never touch the cache, so the view shares it.
"""

from __future__ import annotations

import copy

from .store import KubeStore


def records_view(store: KubeStore) -> KubeStore:
    """``store`` writing through a sibling of its transport with a token bucket of its own (the
    transport's ``for_records``; a transport without one is shared as it is). Not to be closed:
    the store it views owns the cache, the informers and the client."""
    view = copy.copy(store)
    for_records = getattr(store.transport, "for_records", None)
    if for_records is not None:
        view.transport = for_records()
    return view
