"""Counters and histograms for the scheduling loop: plain numbers, rendered at scrape time.

prometheus_client's metrics take a lock per increment; the engine's thread
records several per admission, so at tens of thousands of admissions a second
that is a measurable share of the loop. These are written by one thread (the
engine's) without locks and read by the scrape thread through a copy (a dict
or list copy is one step under the GIL); a scrape may see a histogram's count
one observation ahead of its sum, never a torn bucket list.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector


class CounterChild:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount


class HistogramChild:
    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # one per bucket, then +Inf
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value


class CounterFamily:
    def __init__(self, name: str, doc: str, labels: Sequence[str] = ()) -> None:
        self.name = name.removesuffix("_total")
        self.doc = doc
        self.label_names = list(labels)
        self.children: dict[tuple[str, ...], CounterChild] = {}

    def labels(self, *values: str) -> CounterChild:
        child = self.children.get(values)
        if child is None:
            child = self.children[values] = CounterChild()
        return child

    def inc(self, amount: float = 1.0) -> None:
        self.labels().inc(amount)

    def render(self) -> Metric:
        family = CounterMetricFamily(self.name, self.doc, labels=self.label_names)
        for values, child in sorted(dict(self.children).items()):
            family.add_metric(list(values), child.value)
        return family


class HistogramFamily:
    def __init__(self, name: str, doc: str, labels: Sequence[str] = (), buckets: Sequence[float] = ()) -> None:
        self.name = name
        self.doc = doc
        self.label_names = list(labels)
        self.bounds = tuple(sorted(buckets))
        self.children: dict[tuple[str, ...], HistogramChild] = {}

    def labels(self, *values: str) -> HistogramChild:
        child = self.children.get(values)
        if child is None:
            child = self.children[values] = HistogramChild(self.bounds)
        return child

    def observe(self, value: float) -> None:
        self.labels().observe(value)

    def render(self) -> Metric:
        family = HistogramMetricFamily(self.name, self.doc, labels=self.label_names)
        for values, child in sorted(dict(self.children).items()):
            counts, total = list(child.counts), child.sum
            cumulative, running = [], 0
            for bound, count in zip((*self.bounds, float("inf")), counts):
                running += count
                cumulative.append((_bound_text(bound), float(running)))
            family.add_metric(list(values), cumulative, total)
        return family


def _bound_text(bound: float) -> str:
    if bound == float("inf"):
        return "+Inf"
    return repr(float(bound))


class SeriesCollector(Collector):
    """Renders a set of families at scrape time."""

    def __init__(self, families: Iterable[CounterFamily | HistogramFamily]) -> None:
        self.families = list(families)

    def describe(self) -> Iterable[Metric]:
        return []

    def collect(self) -> Iterable[Metric]:
        return [f.render() for f in self.families]
