"""The runs as peers' tools count them: per workload and variant, the successful timed runs in
the order they ran, which is what hyperfine calls a command's runs and Google Benchmark a
benchmark's repetitions. The formats that peers read (hyperfine_json, gbench_format) draw
these groups, so they name and order them alike.

Warm-up runs are left out (hyperfine and Google Benchmark leave theirs out too), and so are
failed runs, which have no metrics: benchlab's own report lists them. A variant whose runs
came from several hosts (merged with `benchlab import`) is one group per host, labelled as
the report labels such columns (`variant@host`); a variant that ran on one host, a virtual
machine's guest included, is one group under its own name.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from benchlab.errors import SpecError
from benchlab.report.views import View
from benchlab.stats.report_model import Report, Run

# Formats that hold every run and every view at once: the data is loaded with every run for them
# (`benchlab report` and `run` otherwise skip reading each run whole), and only view `auto` is theirs.
WHOLE = frozenset({"json", "hyperfine", "gbench"})


def check_whole(fmt: str, view: View) -> None:
    if view != "auto":
        raise SpecError(f"the {fmt} report has no '{view}' view: it holds every view's numbers (leave the view out)")


@dataclass(frozen=True)
class Sample:
    workload: str
    variant: str
    host: str | None  # the host's label where the variant ran on several, else None
    runs: list[Run]

    @property
    def label(self) -> str:
        """The variant as the report's columns name it: `variant@host` where it ran on several hosts."""
        return self.variant if self.host is None else f"{self.variant}@{self.host}"


def workload_order(report: Report) -> list[str]:
    """The spec's workloads in its order, then any other workload the runs name (an imported
    bundle's), in the order they first ran."""
    named = [str(w.get("name")) for w in report.experiment.spec.get("workloads", []) if isinstance(w, dict)]
    return list(dict.fromkeys([*named, *(run["workload"] for run in report.runs)]))


def samples(report: Report) -> list[Sample]:
    """Every workload x variant (x host) with at least one successful timed run: workloads in the
    spec's order, variants in the report's (the baseline first), runs in the order they ran."""
    grouped: dict[tuple[str, str], dict[int, list[Run]]] = defaultdict(lambda: defaultdict(list))
    for run in report.runs:
        if run["status"] == "ok" and not run["warmup"]:
            grouped[(run["workload"], run["variant"])][run["host"]].append(run)
    from benchlab.stats.environments import host_labels  # it loads the store (SQLAlchemy): only for these formats

    labels = host_labels({int(h): fp for h, fp in report.experiment.hosts.items()})
    variants = list(dict.fromkeys([*report.variants, *(v for _, v in grouped)]))
    found = []
    for workload in workload_order(report):
        for variant in variants:
            by_host = grouped.get((workload, variant), {})
            for host, runs in sorted(by_host.items()):
                label = labels.get(host, f"host{host}") if len(by_host) > 1 else None
                found.append(Sample(workload, variant, label, runs))
    return found
