"""`benchlab bisect`'s experiments: each pair the search asks about (stats/bisection.py) run as
an experiment of its own through the runner, stored like any other and judged by `analyze`.

A pair's experiment is the spec cut down to its two variants and the one workload watched,
with the baseline, alpha and equivalence margin the search gives it, run until decided:
blocks are added from `min_blocks` on until the watched row is better, worse or same (the ends,
when worse, until their change is measured well enough to set the steps' margin: `settled`),
up to `max_blocks` (the sequential thresholds hold for any stopping rule, this one included). Its
name says what it is: `NAME-bisect-ends`, `NAME-bisect-at-VARIANT`, `NAME-bisect-boundary`,
so `benchlab report` shows every step's evidence, and `--resume` reuses finished steps.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from contextlib import AbstractContextManager

from benchlab.analysis.analyze import Analysis, analyze
from benchlab.errors import SpecError
from benchlab.runner import Prepared, Progress, Runner
from benchlab.spec.fields import NAME_MAX
from benchlab.spec.models import ExperimentSpec, MetricSettings, UntilDecided, VariantSpec
from benchlab.stats.bisection import ROLES, Judgement, Pair, settled
from benchlab.stats.families import CHARACTERISTIC, classify
from benchlab.stats.judge import Row
from benchlab.stats.verdict import NOT_JUDGED, UNCLEAR
from benchlab.store import ExperimentRecord, Store

SUFFIXES = {"ends": "bisect-ends", "boundary": "bisect-boundary"}


def default_metric(spec: ExperimentSpec, workload: str) -> str:
    """A command's outcome is its wall time; a built-in or Google Benchmark binary reports its own
    `real_time` (Google Benchmark's first column)."""
    return "wall" if spec.workload(workload).command is not None else "real_time"


def watched_workload(spec: ExperimentSpec, name: str | None) -> str:
    """The workload bisected: the one named, or the spec's only one."""
    names = [w.name for w in spec.workloads]
    if name is not None:
        if name not in names:
            raise SpecError(f"the spec has no workload {name!r} (it has {', '.join(names)})", where="--workload")
        return name
    if len(names) > 1:
        raise SpecError(f"the spec has {len(names)} workloads ({', '.join(names)}): name the one to bisect", where="--workload")
    return names[0]


class StepExperiments:
    """The `Judge` of a real bisection: `__call__` runs one pair's experiment and reads its
    watched row. Made only after every check a step could fail (the metric, every variant
    against this machine, the steps' names), so that bad input is refused before anything runs
    and before the database is opened (`open_store`, on first use). `progress` makes the display
    of one experiment's runs."""

    def __init__(
        self,
        open_store: Callable[[], Store],
        spec: ExperimentSpec,
        *,
        workload: str,
        metric: str,
        until: UntilDecided,
        resume: bool,
        progress: Callable[[], AbstractContextManager[Progress]],
    ) -> None:
        self.open_store, self.spec, self.workload, self.metric = open_store, spec, workload, metric
        self.until, self.resume, self.progress = until, resume, progress
        # judged as a report judges it (`classify`); a launcher's metrics are stored with a direction,
        # and a workload's own metric without one is caught once it has run (`_watched`)
        if classify(spec.workload(workload).model_dump(mode="json"), metric, "lower")[0] == CHARACTERISTIC:
            raise SpecError(
                f"{metric!r} is not judged (it has no direction): give it one in the workload's metrics, or bisect another",
                where="--metric",
            )
        longest = max((self.name(Pair(role, "", v.name, 0.5)) for role in ROLES for v in spec.variants), key=len)
        if len(longest) > NAME_MAX:
            raise SpecError(
                f"a step's experiment name ({longest[:40]}...) would pass {NAME_MAX} characters: give the spec a shorter name"
            )
        Prepared.from_spec(self._cut(spec.name, spec.variants, baseline=spec.variants[0].name, alpha=spec.alpha, margin=None))

    @functools.cached_property
    def store(self) -> Store:
        return self.open_store()

    def name(self, pair: Pair) -> str:
        return f"{self.spec.name}-{SUFFIXES.get(pair.role, f'bisect-at-{pair.candidate}')}"

    def spec_for(self, pair: Pair) -> ExperimentSpec:
        """The spec of a pair's experiment, named after it."""
        variants = {v.name: v for v in self.spec.variants}
        chosen = [variants[pair.baseline], variants[pair.candidate]]
        return self._cut(self.name(pair), chosen, baseline=pair.baseline, alpha=pair.alpha, margin=pair.margin)

    def _cut(
        self, name: str, variants: list[VariantSpec], *, baseline: str, alpha: float, margin: float | None
    ) -> ExperimentSpec:
        """The spec cut to these variants and the watched workload, with this baseline, alpha and
        margin, run until decided. The watched metric is named in the workload's `metrics` even
        without a margin, so that a misspelt one is refused (by `Prepared`) before anything runs."""
        workload = self.spec.workload(self.workload)
        settings = workload.metrics.get(self.metric) or MetricSettings()
        if margin is not None:
            settings = settings.model_copy(update={"margin": margin})
        watched = workload.model_dump()
        watched["metrics"][self.metric] = settings.model_dump()
        fields = {
            **self.spec.model_dump(),
            "name": name,
            "workloads": [watched],
            "variants": [v.model_dump() for v in variants],
            "baseline": baseline,
            "alpha": alpha,
            "until_decided": self.until.model_dump(),
            "fit": "none",
        }
        return ExperimentSpec.model_validate(fields)

    def _watched(self, analysis: Analysis, candidate: str) -> Row | None:
        row = next(
            (r for r in analysis.rows if (r.workload, r.metric, r.variant) == (self.workload, self.metric, candidate)), None
        )
        if row is not None and row.verdict == NOT_JUDGED:
            raise SpecError(
                f"{self.metric!r} of {self.workload} is not judged (it has no direction): give it one in the workload's "
                "metrics, or bisect another",
                where="--metric",
            )
        return row

    def __call__(self, pair: Pair) -> Judgement:
        prepared = Prepared.from_spec(self.spec_for(pair))

        def decided(exp: ExperimentRecord) -> bool:
            analysis = analyze(self.store.load(exp))
            row = self._watched(analysis, pair.candidate)
            if row is None or not row.n or math.isnan(row.baseline_median):  # a variant has no value yet
                return bool(analysis.failed_runs)  # its runs fail (a build that breaks): more blocks cannot help
            return settled(pair.role, row.verdict, row.change, row.change_ci)

        with self.progress() as progress:
            exp = Runner(self.store, progress=progress).run(prepared, resume=self.resume, decided=decided)
        analysis = analyze(self.store.load(exp))
        failed = len(analysis.failed_runs)
        failures = f"{failed} run(s) failed" if failed else ""
        row = self._watched(analysis, pair.candidate)
        if row is None or not row.n:  # nothing measured: no blocks decided anything
            return Judgement(UNCLEAR, experiment=exp.name, note=failures or f"no run measured {self.metric}")
        why = row.note if row.verdict == UNCLEAR else ""  # why a row stayed unclear; a decided one needs none
        return Judgement(
            row.verdict, change=row.change, change_ci=row.change_ci, change_ci90=row.change_ci90,
            blocks=row.sample_size, experiment=exp.name, note="; ".join(n for n in (failures, why) if n),
        )  # fmt: skip
