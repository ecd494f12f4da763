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


def cycles_for(controller: ClusterController, clock: Callable[[], float], budget: float) -> bool:
    """Scheduling cycles, each followed by the controllers' reactions, until nothing moves or
    ``budget`` seconds (wall) are spent; the reactions to what arrived since the last call
    come first.

    True when the budget ran out with work left: the caller yields to its event loop and calls
    again. Under load batches grow to what the budget allows; when idle, each message is acted
    on at once. (A cycle's trailing reactions are the next cycle's leading ones: nothing arrives
    in between, since the event loop does not run until this returns.)
    """
    deadline = time.perf_counter() + budget
    moved = controller.react(clock())
    while True:
        now = clock()
        result = controller.run_cycle(now)
        controller.cycles += 1
        moved = controller.react(now) or result.changed or moved
        if not moved:
            return False
        if time.perf_counter() >= deadline:
            return True
        moved = False
