"""`analyze()`: an experiment's stored runs judged, and turned into the report every format renders.

`Analysis.report()` is the typed report (report_model.py); the JSON report is
its serialisation and the table, Markdown and CSV are drawn from it, so every number
a person reads is one a machine can read too.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from benchlab import report_model as model
from benchlab.analysis.calibration import calibration_report
from benchlab.analysis.environments import on_machines, split_by_host, used_hosts
from benchlab.analysis.profiles import explain
from benchlab.analysis.rows import geomean_row, metric_row
from benchlab.analysis.scores import SCORES, score_report, suite_series
from benchlab.analysis.sweep import sweep_report
from benchlab.errors import SpecError
from benchlab.measure.host import noise_warnings
from benchlab.spec.models import ExperimentSpec
from benchlab.stats.families import PRIMARY, SECONDARY, classify
from benchlab.stats.judge import KEY_SHIFT, GeomeanRow, Row, Sequential, Series, Settings, judge, undecided
from benchlab.store import FAILED_BENCHMARKS, ExperimentData, RunRecord
from benchlab.suite.baseline import load_baseline

NOISY_SPREAD = 0.03
MAX_SPREAD_LINES = 5  # more noisy workloads than this read as one line about the machine


@dataclass
class Analysis:
    experiment: model.Experiment
    settings: Settings
    variants: list[str]
    rows: list[Row]
    geomean: list[GeomeanRow]
    data: ExperimentData
    warnings: list[str] = field(default_factory=list)
    scores: model.Scores | None = None  # CPU-suite scores, where the experiment ran suite workloads
    sweep: model.Sweep | None = None  # sweep points and fitted lines, where variants come from a sweep
    score_rows: list[Row] = field(default_factory=list)  # the judged score rows behind `scores`
    failed_benchmarks: list[model.FailedBenchmark] = field(default_factory=list)
    profiles: model.Profiles | None = None  # the profiled runs judged, where the experiment has them

    @property
    def failed_runs(self) -> list[RunRecord]:
        return [r for r in self.data.records if r.status != "ok"]

    def undecided(self) -> list[Row]:
        """The undecided primary rows, scores included (see `analysis.undecided`)."""
        if len(self.variants) < 2:  # a lone variant is described, never judged: nothing to wait for
            return []
        return undecided([*self.rows, *self.score_rows])

    def report(self) -> model.Report:
        """The report, with every run's raw values where the data was loaded with every record
        (a JSON report; a table draws without them)."""
        report = model.Report(
            experiment=self.experiment,
            baseline=self.settings.baseline,
            variants=self.variants,
            alpha=self.settings.alpha,
            margin=self.settings.margin,
            correction=self.settings.correction,
            rows=[metric_row(r) for r in self.rows],
            geomean=[geomean_row(g) for g in self.geomean],
            scores=self.scores,
            sweep=self.sweep,
            failed_runs=[_run_summary(r) for r in self.failed_runs],
            failed_benchmarks=self.failed_benchmarks,
            profiles=self.profiles,
            warnings=self.warnings,
            runs=[],
        )
        if not self.data.every_record:
            return report
        values = self.data.run_values()
        return report.with_runs([model.Run(**_run_summary(r), metrics=values[r.id]) for r in self.data.records])


def _run_summary(run: RunRecord) -> model.RunSummary:
    return model.RunSummary(
        workload=run.workload, variant=run.variant, block=run.block, warmup=run.warmup, host=run.host_id,
        status=run.status, exit_code=run.exit_code, message=run.message, stderr_tail=run.stderr_tail,
        started_at=run.started_at, ended_at=run.ended_at, details=run.details,
    )  # fmt: skip


def failed_benchmarks(data: ExperimentData) -> list[model.FailedBenchmark]:
    """Benchmarks of a binary that failed inside runs that otherwise succeeded (Google Benchmark's
    `SkipWithError`): per workload and benchmark, in how many of the workload's successful runs, per
    variant, with the last message. Their metrics are missing from those runs, never made up."""
    variants: dict[tuple[str, str], dict[str, int]] = {}
    messages: dict[tuple[str, str], str] = {}
    for run in data.records:  # counted in the runs that succeeded, as `runs` is: a failed run's are no news
        if run.status != "ok" or not run.details or not run.details.get(FAILED_BENCHMARKS):
            continue
        for name, message in run.details[FAILED_BENCHMARKS].items():
            counts = variants.setdefault((run.workload, name), {})
            counts[run.variant] = counts.get(run.variant, 0) + 1
            messages[(run.workload, name)] = message
    if not variants:
        return []
    table = data.runs
    ok_runs = cast(list[int], np.bincount(table.workload[table.ok], minlength=len(table.workloads)).tolist())
    ok = dict(zip(table.workloads, ok_runs, strict=True))
    return [
        model.FailedBenchmark(workload=workload, benchmark=name, variants=counts, message=messages[(workload, name)],
                              failed=sum(counts.values()), runs=ok[workload])
        for (workload, name), counts in variants.items()
    ]  # fmt: skip


def _benchmark_warning(entry: model.FailedBenchmark) -> str:
    variants = ", ".join(f"{v} {n}" for v, n in entry.variants.items())
    return (
        f"{entry.workload}: benchmark {entry.benchmark} failed in {entry.failed} of {entry.runs} runs "
        f"({variants}; its metrics are missing from those runs): {entry.message}"
    )


def settings_from_spec(spec: ExperimentSpec) -> Settings:
    """The judging settings of a stored spec (read once, where the store read it: `spec.stored`)."""
    margins = {
        (w.name, metric): given.margin for w in spec.workloads for metric, given in w.metrics.items() if given.margin is not None
    }
    until = spec.until_decided
    return Settings(
        baseline=spec.baseline_name,
        alpha=spec.alpha,
        correction=spec.correction,
        margin=spec.margin,
        margins=margins,
        sequential=Sequential(until.min_blocks, until.max_blocks) if until else None,
    )


def build_series(data: ExperimentData) -> tuple[list[Series], list[str]]:
    """Sample values by (workload, metric); warm-ups, failures and other workload versions left out.

    Works on the metric columns with numpy: a report on 100,000 runs must not loop over a
    million values in Python.
    """
    runs, names = data.runs, data.metrics.names
    workloads, variants = runs.workloads, runs.variants
    if not len(runs) or not names:
        return [], []
    w_index = {w: i for i, w in enumerate(workloads)}
    # the pure core classifies plain JSON, as a spec stores a workload
    specs = {w.name: w.model_dump(mode="json", include={"metrics", "command"}) for w in data.experiment.spec.workloads}
    run_key = (runs.host_id << KEY_SHIFT) | runs.block
    ok = runs.ok & ~runs.warmup
    usable = ok & runs.current
    skipped_versions = int((ok & ~runs.current).sum())
    pos = np.searchsorted(runs.ids, data.metrics.run_ids)  # the table is in stored order: ids ascending
    keep = usable[pos]
    pos = pos[keep]
    group = (runs.workload[pos] * len(names) + data.metrics.name_codes[keep]) * len(variants) + runs.variant[pos]
    # as the smallest integers that hold them: numpy sorts 8- and 16-bit ones stably by radix, ten times faster
    by_group = np.argsort(group.astype(np.min_scalar_type(int(group.max(initial=0)))), kind="stable")
    group, keys, values = group[by_group], run_key[pos][by_group], data.metrics.values[keep][by_group]
    starts = np.concatenate([[0], np.flatnonzero(np.diff(group)) + 1])
    ends = np.concatenate([starts[1:], [len(group)]])
    series: dict[tuple[int, int], Series] = {}
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        rest, v = divmod(int(group[start]), len(variants))
        w, code = divmod(rest, len(names))
        workload, metric = workloads[w], names[code]
        if (w, code) not in series:
            unit, stored = data.metric_info.get((workload, metric), ("", "none"))
            family, direction = classify(specs.get(workload), metric, stored)
            series[(w, code)] = Series(workload, metric, unit, direction, {}, family)
        series[(w, code)].values[variants[v]] = (keys[start:end], values[start:end])
    rank = {PRIMARY: 0, SECONDARY: 1}  # outcome first, then what explains it, then characteristics
    ordered = sorted(series.values(), key=lambda s: (w_index[s.workload], rank.get(s.family, 2), s.metric))
    warnings = [f"{skipped_versions} run(s) of another workload version were left out"] if skipped_versions else []
    return ordered, warnings


def _spread_warnings(series: list[Series], baseline: str) -> list[str]:
    """One line per noisy workload, naming its noisiest timing metric."""
    worst: dict[str, tuple[float, str]] = {}
    for s in series:
        if s.direction == "none" or s.metric not in ("wall", "real_time", "cpu_time", "items_per_second"):
            continue
        _, x = s.of(baseline)
        if len(x) < 3 or np.median(x) <= 0:
            continue
        spread = 1.4826 * float(np.median(np.abs(x - np.median(x)))) / float(np.median(x))
        if spread > NOISY_SPREAD and spread > worst.get(s.workload, (0.0, ""))[0]:
            worst[s.workload] = (spread, s.metric)
    if len(worst) > MAX_SPREAD_LINES:
        name, (spread, metric) = max(worst.items(), key=lambda item: item[1][0])
        typical = float(np.median([s for s, _ in worst.values()]))
        return [
            f"{len(worst)} workloads have a run-to-run spread over {NOISY_SPREAD:.0%} on the baseline (median {typical:.1%}, "
            f"worst {name}: {spread:.1%} of {metric}): the machine is noisy; more blocks or a quieter machine will help"
        ]
    return [
        f"{w}: run-to-run spread {spread:.1%} (robust CV of {metric}) on the baseline" for w, (spread, metric) in worst.items()
    ]


def analyze(data: ExperimentData, *, reference_host: str | None = None, baseline: str | None = None) -> Analysis:
    """Judges every variant against the baseline (the spec's, or `baseline`, chosen after the run:
    the same runs, the same pairing, another reference); where runs come from several hosts,
    every variant on every host against the baseline on `reference_host`."""
    spec = data.experiment.spec
    settings = settings_from_spec(spec)
    if baseline is not None:
        known = list(data.experiment.variant_ids)
        if baseline not in known:
            raise SpecError(
                f"experiment '{data.experiment.name}' has no variant '{baseline}' (it has {', '.join(known)})",
                where="--baseline",
            )
        settings = dataclasses.replace(settings, baseline=baseline)
    data = on_machines(data)
    hosts = used_hosts(data)
    if len(hosts) > 1 or reference_host is not None:
        data, baseline = split_by_host(data, settings.baseline, reference_host)
        settings = dataclasses.replace(settings, baseline=baseline)
    variants = data.runs.variants
    series, warnings = build_series(data)
    baseline_scores = load_baseline()
    suite = suite_series(spec, data.experiment.workload_versions, series, variants, baseline_scores)
    rows, geomean = judge([*series, *suite.series], variants, settings)
    score_rows = [r for r in rows if r.group == SCORES]
    rows = [r for r in rows if r.group != SCORES]
    scores = score_report(suite, score_rows, settings, baseline_scores)
    warnings += suite.warnings
    by_key = {(r.workload, r.metric, r.variant): r for r in [*rows, *score_rows]}

    def judged(workload: str, metric: str, variant: str) -> model.MetricRow | None:
        found = by_key.get((workload, metric, variant))
        return metric_row(found) if found else None

    sweep, sweep_warnings = sweep_report(spec, spec.fit, [*suite.overall, *series], settings, judged)
    warnings += sweep_warnings
    failed = int((~data.runs.ok).sum())
    if failed:
        warnings.append(f"{failed} run(s) failed; they are not samples (see failed_runs)")
    benchmarks = failed_benchmarks(data)
    warnings += map(_benchmark_warning, benchmarks)
    warnings += _spread_warnings(series, settings.baseline)
    for host_id, fp in data.hosts.items():
        for text, fix in noise_warnings(fp, live=False):
            warnings.append(f"host {host_id}: {text} ({fix})")
    # the host that ran most of the experiment (the only one, unless bundles were merged)
    main_host = None
    if data.hosts:
        main_host = hosts[0] if hosts else next(iter(data.hosts))
    experiment = model.Experiment(
        id=data.experiment.id,
        name=data.experiment.name,
        created_at=data.experiment.created_at,
        spec=data.experiment.spec_document,  # as stored: its names as written, wherever that was
        host=data.hosts[main_host] if main_host is not None else None,
        hosts={str(k): v for k, v in data.hosts.items()},
        workload_versions=data.experiment.workload_versions,
        calibration=calibration_report(data.calibrations, spec, data.experiment.workload_versions, main_host),
    )
    profiles = explain(data, settings, variants, series)
    return Analysis(
        experiment, settings, variants, rows, geomean, data, warnings, scores, sweep, score_rows, benchmarks, profiles
    )
