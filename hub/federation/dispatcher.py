"""Which worker clusters a workload is nominated to (``status.nominatedClusterNames``).

Kueue's dispatchers (semantics §9.2), as pure functions:

* **AllAtOnce** (default): every cluster of the MultiKueueConfig whose agent is
  connected, sorted; re-evaluated whenever connectivity changes.
* **Incremental**: ``stepSize`` clusters at a time in config order (connected
  or not: a nominated cluster gets its copy when its agent connects); a new
  round adds the next ``stepSize`` only after a round passed without admission.
* **External** (any other ``dispatcherName``): an outside controller writes the
  nominations; MultiKueue only syncs copies to them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hub.api.config import ALL_AT_ONCE, INCREMENTAL

# Kueue's incrementalDispatcherRoundTimeout.
INCREMENTAL_ROUND_TIMEOUT = 300.0


def all_at_once(clusters: Sequence[str], usable: Callable[[str], bool]) -> list[str]:
    return sorted(name for name in clusters if usable(name))


def next_increment(clusters: Sequence[str], nominated: Sequence[str], step: int) -> list[str]:
    """The next ``step`` clusters in config order that are not nominated yet (empty when none are left)."""
    taken = set(nominated)
    return [name for name in clusters if name not in taken][: max(step, 1)]


def nominate(
    dispatcher: str,
    clusters: Sequence[str],
    nominated: Sequence[str],
    usable: Callable[[str], bool],
    step: int,
    *,
    new_round: bool,
) -> list[str]:
    """The nominations after this reconcile. ``new_round``: the incremental round timed out (or
    none started yet)."""
    if dispatcher == ALL_AT_ONCE:
        return all_at_once(clusters, usable)
    if dispatcher == INCREMENTAL:
        if new_round:
            return [*nominated, *next_increment(clusters, nominated, step)]
        return list(nominated)
    return list(nominated)
