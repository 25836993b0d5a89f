"""`benchlab diff A B`: results measured separately, compared as two samples, as a `Report`.

Unpaired by design. Two experiments' blocks never shared a moment, however well their numbers
line up, so pairing them would claim a control over drift that was never there: every runs of
one side are compared with every runs of the other by the judge's two-sample path (Mann-Whitney
U with the two-sample Hodges-Lehmann shift, stats/judge.py), under the same verdict rules,
families, correction and margin as an experiment's own rows (`judge`). The report's warnings
open with what that costs: more runs to decide, and drift between the sessions (another day,
host or kernel) that reads as a change; the two sides are named with their hosts and dates.

A and B are each one variant (named, or the only one), compared as `A` against `B`; or, where
both are experiments of several variants, variant by variant under the same names, each row then
named `WORKLOAD/VARIANT` (names cannot hold `/`). Only the same work is compared: a workload of
the same name and version, a metric of the same unit; what is left out is said.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from benchlab import report_model as model
from benchlab.analysis.analyze import analyze, build_series, settings_from_spec
from benchlab.analysis.profiles import judge_profiles
from benchlab.analysis.rows import metric_row
from benchlab.analysis.sides import Side
from benchlab.errors import SpecError
from benchlab.stats.judge import Series, Settings, judge

# A's runs are keyed 0, 1, ... and B's from here on: no key is on both sides, so no run ever pairs
B_KEYS = 1 << 62
# B's profiled runs are put on hosts of their own (a profiled run pairs by host and block), for the same reason
B_HOSTS = 1 << 30


@dataclasses.dataclass(frozen=True)
class Match:
    """A variant of A compared with a variant of B; `suffix` names the row where variants are matched by name."""

    a: str
    b: str
    suffix: str | None


def diff(a: Side, b: Side) -> model.Report:
    """The unpaired comparison of B against A (the baseline), rendered by every format; two
    variants of one experiment are judged paired instead (`one_experiment`)."""
    if a.label == b.label:
        raise SpecError(f"A and B are both '{a.label}': a diff compares two different sets of results")
    if one_experiment(a, b):
        return _variants_of_one(a, b)
    matches, warnings = _matches(a, b)
    settings, more = _settings(a, b)
    warnings += more
    series, more = _series(a, b, matches)
    warnings += more
    margins = {(s.workload, s.metric): settings.margins.get((s.group, s.metric)) for s in series}
    settings = dataclasses.replace(settings, margins={key: m for key, m in margins.items() if m is not None})
    if not series:
        raise SpecError(
            f"nothing to compare: {a.label} and {b.label} share no workload and metric measured in both"
            + (f" ({'; '.join(warnings)})" if warnings else "")
        )
    rows, _ = judge(series, [a.label, b.label], settings)
    sides = [a.described([m.a for m in matches]), b.described([m.b for m in matches])]
    compared = {s.group for s in series}
    experiment = model.Experiment(
        id=0, name=f"diff {a.label} {b.label}", created_at=max(s.created_at for s in sides), spec={}, host=None, hosts={},
        workload_versions={w: v for w, v in a.data.experiment.workload_versions.items() if w in compared},
        calibration={}, sides=sides,
    )  # fmt: skip
    return model.Report(
        experiment=experiment, baseline=a.label, variants=[a.label, b.label], alpha=settings.alpha, margin=settings.margin,
        correction=settings.correction, rows=[metric_row(r) for r in rows], geomean=[], scores=None, sweep=None,
        failed_runs=[], failed_benchmarks=[], warnings=[*_unpaired_notes(experiment), *a.notes, *b.notes, *warnings], runs=[],
        profiles=_profiles(a, b, matches, settings),
    )  # fmt: skip


def _row_name(workload: str, match: Match) -> str:
    return f"{workload}/{match.suffix}" if match.suffix else workload


def _profiles(a: Side, b: Side, matches: list[Match], settings: Settings) -> model.Profiles | None:
    """Both sides' profiled runs of the same work judged as two samples, like the metrics: each
    side's runs of a match as one variant (A's label, B's), B's on hosts of their own so that no
    run pairs with one of the other session."""
    versions_a, versions_b = a.data.experiment.workload_versions, b.data.experiment.workload_versions
    same = {w for w, v in versions_a.items() if versions_b.get(w) == v}
    runs = [
        dataclasses.replace(
            run,
            variant=side.label,
            host_id=run.host_id + offset,
            workload=f"{run.workload}/{m.suffix}" if m.suffix else run.workload,
        )
        for m in matches
        for side, variant, offset in ((a, m.a, 0), (b, m.b, B_HOSTS))
        for run in side.data.profiled
        if run.variant == variant and run.workload in same
    ]
    if not runs:
        return None
    workloads = list(dict.fromkeys(run.workload for run in runs))
    return judge_profiles(runs, workloads, [a.label, b.label], settings, {})


def one_experiment(a: Side, b: Side) -> bool:
    """Whether A and B are two variants of one experiment read from one place (`NAME:X NAME:Y`):
    their runs shared blocks, so pairing them is sound."""
    same = a.source == b.source and a.data.experiment.id == b.data.experiment.id
    return same and a.data.experiment.name == b.data.experiment.name and bool(a.named_variant and b.named_variant)


def _variants_of_one(a: Side, b: Side) -> model.Report:
    """B against A exactly as the experiment's own report judges it with A as its baseline
    (`benchlab report NAME --baseline A`: paired by block, every variant judged, so the families
    corrected together are the report's), with the rows of B alone kept, scores included."""
    assert a.named_variant is not None and b.named_variant is not None
    names = [a.named_variant, b.named_variant]
    report = analyze(a.data, baseline=names[0]).report()
    note = (
        f"{a.label} and {b.label} are variants of one experiment: their runs shared blocks, so they are judged paired, "
        f"as `benchlab report {a.data.experiment.name} --baseline {names[0]}` judges {names[1]} (the same rows)"
    )

    def of(label: str, *wanted: str) -> bool:
        """Whether a column is one of `wanted`: on one host its name, on several `NAME@HOST`
        (the report's columns are then each variant on each host; names hold no `@`)."""
        return label.split("@", 1)[0] in wanted

    # the report's own labels, in its order: the reference column first (`A@HOST` on several hosts)
    variants = [report.baseline, *(v for v in report.variants if v != report.baseline and of(v, names[1]))]
    scores = report.scores
    if scores is not None:
        kept = [r for r in scores.rows if r.variant in variants]
        scores = scores.model_copy(update={"rows": kept, "variants": variants})
    return report.model_copy(
        update={
            "variants": variants, "rows": [r for r in report.rows if of(r.variant, names[1])],
            "geomean": [g for g in report.geomean if of(g.variant, names[1])], "scores": scores,
            "failed_runs": [r for r in report.failed_runs if of(r["variant"], *names)],
            "warnings": [note, *report.warnings],
        }
    )  # fmt: skip


def _matches(a: Side, b: Side) -> tuple[list[Match], list[str]]:
    """Which variant of A meets which of B: one each, or the same names where both have several."""
    va, vb = a.variants, b.variants
    if len(va) == 1 and len(vb) == 1:
        return [Match(va[0], vb[0], None)], []
    if len(va) == 1 or len(vb) == 1:
        many, one = (a, b) if len(va) > 1 else (b, a)
        raise SpecError(
            f"'{many.label}' has variants {', '.join(many.variants)} and '{one.label}' one: name the variant to compare "
            f"with it ({many.label}:{many.variants[0]})"
        )
    common = [v for v in va if v in vb]
    if not common:
        raise SpecError(
            f"'{a.label}' (variants {', '.join(va)}) and '{b.label}' (variants {', '.join(vb)}) share no variant name: "
            f"name one on each side ({a.label}:{va[0]} {b.label}:{vb[0]})"
        )
    warnings = [
        f"variants only in {side.label}: {', '.join(only)} (not compared)"
        for side, only in ((a, [v for v in va if v not in vb]), (b, [v for v in vb if v not in va]))
        if only
    ]
    return [Match(v, v, v) for v in common], warnings


def _settings(a: Side, b: Side) -> tuple[Settings, list[str]]:
    """A's judging settings (alpha, correction, margins): the baseline's, as in an experiment.
    Never sequential: a diff is one look at finished results."""
    mine, theirs = settings_from_spec(a.data.experiment.spec), settings_from_spec(b.data.experiment.spec)
    differ = [
        f"{name} {getattr(theirs, name)}"
        for name in ("alpha", "correction", "margin")
        if getattr(mine, name) != getattr(theirs, name)
    ]
    warnings = [f"{b.label} was set up with {', '.join(differ)}; {a.label}'s settings are used"] if differ else []
    return dataclasses.replace(mine, baseline=a.label, sequential=None), warnings


def _series(a: Side, b: Side, matches: list[Match]) -> tuple[list[Series], list[str]]:
    """One series per workload, metric and match that both sides measured (`two_samples`)."""
    series_a, notes_a = build_series(a.data)
    series_b, notes_b = build_series(b.data)
    warnings = [f"{a.label}: {n}" for n in notes_a] + [f"{b.label}: {n}" for n in notes_b]
    warnings += _failures(a, [m.a for m in matches]) + _failures(b, [m.b for m in matches])
    theirs = {(s.workload, s.metric): s for s in series_b}
    workloads_a, workloads_b = a.data.experiment.workload_versions, b.data.experiment.workload_versions
    for side, mine, others in ((a, workloads_a, workloads_b), (b, workloads_b, workloads_a)):
        only = [w for w in mine if w not in others]
        if only:
            warnings.append(f"workloads only in {side.label}: {', '.join(only)} (not compared)")
    other_version = [w for w in workloads_a if w in workloads_b and workloads_a[w] != workloads_b[w]]
    warnings += [
        f"workload {w} is version {workloads_a[w]} in {a.label} and {workloads_b[w]} in {b.label}: "
        "results of different work are never compared"
        for w in other_version
    ]
    out: dict[str, list[Series]] = {}  # by row name: a match's metrics together, as an experiment's variant's
    for s in series_a:
        other = theirs.get((s.workload, s.metric))
        if s.workload in other_version or other is None:
            continue
        if other.unit != s.unit:
            units = f"{s.unit!r} in {a.label} and {other.unit!r} in {b.label}"
            warnings.append(f"{s.workload} {s.metric} is in {units}: not compared")
            continue
        for m in matches:
            (_, x), (_, y) = s.of(m.a), other.of(m.b)
            if not len(x) or not len(y):
                continue
            name = _row_name(s.workload, m)
            out.setdefault(name, []).append(two_samples(s, name, (a.label, x), (b.label, y)))
    return [s for named in out.values() for s in named], warnings


def two_samples(like: Series, name: str, a: tuple[str, np.ndarray], b: tuple[str, np.ndarray]) -> Series:
    """A's and B's values of a metric as one series (named `name`, judged like `like`) whose
    pairing keys never meet: the judge can only compare them as two samples. Its group is the
    workload, so a workload's rows are corrected together, as in an experiment."""
    (label_a, x), (label_b, y) = a, b
    values = {
        label_a: (np.arange(len(x), dtype=np.int64), x),
        label_b: (np.arange(B_KEYS, B_KEYS + len(y), dtype=np.int64), y),
    }
    return Series(name, like.metric, like.unit, like.direction, values, like.family, group=like.workload)


def _failures(side: Side, variants: list[str]) -> list[str]:
    runs = side.data.runs
    chosen = np.isin(runs.variant, [runs.variants.index(v) for v in variants])
    failed = int((chosen & ~runs.ok).sum())
    return [f"{side.label}: {failed} run(s) failed; they are not samples"] if failed else []


def _unpaired_notes(experiment: model.Experiment) -> list[str]:
    """What an unpaired comparison costs, said first, with both sides named."""
    a, b = experiment.sides
    notes = [
        f"unpaired: {a.label} and {b.label} were measured separately, so their runs are compared as two samples "
        "(Mann-Whitney U, two-sample Hodges-Lehmann), never paired by block; an unpaired comparison needs more runs "
        "to decide than a paired one, and drift between the two sessions (another day, host, kernel or load) reads as "
        "a change. For a verdict on the change alone, run both as variants of one experiment (benchlab compare)",
        *model.side_lines(experiment),
    ]
    if _machines(a) != _machines(b):
        notes.append(f"{a.label} and {b.label} ran on different machines or kernels: the change includes their difference")
    return notes


def _machines(side: model.Side) -> set[tuple[object, ...]]:
    return {(h.get("hostname"), h.get("cpu_model"), h.get("kernel")) for h in side.hosts.values()}
