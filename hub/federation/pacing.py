"""How an event loop drives a ClusterController: scheduling cycles in small, bounded batches.

``ClusterController.settle`` runs to quiescence, which suits tests and the simulator. A process
serving a federation link must also let its transport write: what one cycle decided (a batch
per agent, or an agent's reports) should be on the wire while the next cycle runs. Loops call
:func:`cycles_for` and yield to their event loop whenever it returns True.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from hub.controllers.cluster import ClusterController


def cycle(controller: ClusterController, now: float) -> bool:
    """One scheduling cycle with the controllers' reactions around it; True if anything moved."""
    moved = controller.react(now)
    result = controller.run_cycle(now)
    controller.cycles += 1
    moved = controller.react(now) or moved
    return moved or result.changed


def cycles_for(controller: ClusterController, clock: Callable[[], float], budget: float) -> bool:
    """Scheduling cycles until nothing moves or ``budget`` seconds (wall) are spent.

    True when the budget ran out with work left: the caller yields to its event loop and calls
    again. Under load batches grow to what the budget allows; when idle, each message is acted
    on at once.
    """
    deadline = time.perf_counter() + budget
    while cycle(controller, clock()):
        if time.perf_counter() >= deadline:
            return True
    return False
