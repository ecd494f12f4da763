"""How fast this machine's cores are while a benchmark runs.

On a shared virtual machine the speed of a core changes from minute to minute: on the
machine of BENCHMARKS.md a fixed piece of pure-Python work took from 1.0 to 1.6 times
as long within one hour, with nothing else running. A benchmark figure alone then
cannot say whether a change or the machine moved it. So the benchmarks run a probe
beside the service under test: a small process that, every ``every`` seconds, does
the same fixed work and measures the CPU time it took (CPU time, not wall time: waiting
for a busy core does not count, a slower core does). The benchmarks print the median
as ``machine_ms``; compare figures of runs whose ``machine_ms`` agree, or scale by it.
"""

from __future__ import annotations

import json
import select
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

EVERY = 2.0  # seconds between samples: the probe costs about 0.5% of one core


def fixed_work() -> int:
    """About 10 ms of dict, string and integer work on this machine (the hub's kind of work)."""
    table: dict[str, int] = {}
    for i in range(20_000):
        table[f"w-{i}"] = i * 3
    total = 0
    for key, value in table.items():
        total += len(key) + value
    return total


def _probe(every: float) -> None:
    """The probe process: sample until stdin closes, then print the samples as one JSON line."""
    samples: list[float] = []
    fixed_work()  # warm: the first run pays for allocating the arenas
    while not select.select([sys.stdin], [], [], every)[0]:
        begin = time.thread_time()
        fixed_work()
        samples.append(time.thread_time() - begin)
    print(json.dumps(samples), flush=True)


@dataclass
class MachineSpeed:
    samples: list[float] = field(default_factory=list)  # CPU seconds of each fixed_work()

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples) * 1000 if self.samples else float("nan")

    @property
    def spread(self) -> tuple[float, float]:
        """The fastest and slowest sample, in ms."""
        if not self.samples:
            return float("nan"), float("nan")
        return min(self.samples) * 1000, max(self.samples) * 1000

    def describe(self) -> str:
        low, high = self.spread
        return f"machine: the fixed work took {self.median_ms:.1f} ms of CPU (median of {len(self.samples)}, {low:.1f}-{high:.1f})"


@contextmanager
def machine_speed(every: float = EVERY) -> Iterator[MachineSpeed]:
    """Probe the machine's speed for the duration of the block; the samples are filled in at its end."""
    speed = MachineSpeed()
    proc = subprocess.Popen(
        [sys.executable, "-m", "hub.bench.machine", str(every)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        yield speed
    finally:
        try:
            out, _ = proc.communicate(timeout=10.0)  # closing stdin ends the sampling
            speed.samples = [float(v) for v in json.loads(out or "[]")]
        except (subprocess.TimeoutExpired, ValueError):
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    _probe(float(sys.argv[1]) if len(sys.argv) > 1 else EVERY)
