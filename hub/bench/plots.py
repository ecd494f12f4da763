"""PNG plots of ``mkhub bench kueue-perf`` runs (matplotlib: ``pip install -e '.[bench]'``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .kueue_config import PerfConfig, Record, timeline


def _step(records: Sequence[Record], start: float) -> float:
    ends = [r.finished for r in records if r.finished is not None]
    wall = (max(ends) - start) if ends else 1.0
    return max(0.1, round(wall / 150, 1))


def plot_kueue_perf(
    config: PerfConfig,
    out_dir: Path,
    real: tuple[Sequence[Record], float] | None,
    virtual: tuple[Sequence[Record], float] | None,
) -> Path:
    """Admissions per second and the cohorts' usage of their quota over time; returns the file."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise SystemExit("error: --plot needs matplotlib (pip install -e '.[bench]')") from exc
    runs = [(label, run) for label, run in (("mkhub serve (real clock)", real), ("engine alone (virtual clock)", virtual)) if run]
    step = max(_step(records, start) for _, (records, start) in runs)
    fig, (ax_adm, ax_use) = plt.subplots(2, 1, figsize=(9, 6.5), sharex=True)
    for label, (records, start) in runs:
        series = timeline(config, records, start, step)
        ax_adm.plot(series["t"], series["admissions_per_s"], label=label, linewidth=1.2)
        ax_use.plot(series["t"], [u * 100 for u in series["usage"]], label=label, linewidth=1.2)
    ax_adm.set_ylabel(f"admissions/s (per {step:g} s)")
    ax_adm.set_title(
        f"Kueue scheduler-perf '{config.name}' ({config.cohorts} cohorts x {config.queues_per_cohort} ClusterQueues, "
        f"{config.workloads:,} workloads)",
        fontsize=10,
    )
    ax_adm.legend(fontsize=8)
    ax_use.set_ylabel("cpu in use / total nominal quota (%)")
    ax_use.set_xlabel("seconds since the first workload was created")
    ax_use.set_ylim(0, 105)
    ax_use.legend(fontsize=8)
    for ax in (ax_adm, ax_use):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"kueue-perf-{config.name}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
