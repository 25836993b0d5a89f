"""The CPU-suite score tables as grids of text cells, shared by the terminal and Markdown
renderers: one table with a column per mode for a lone variant; for a comparison, one
table per mode with each variant's score and its "delta vs reference" column, the shape
of the comparison tables platform teams publish."""

from __future__ import annotations

from collections import defaultdict

from benchlab.report import cells
from benchlab.report.grid import Grid
from benchlab.report_model import Report, ScoreRow, Scores, Sweep

MODE_TITLES = {"single-core": "single-core", "multi-core": "multi-core", "shared": "shared task"}


def _score(row: ScoreRow | None, *, interval: bool) -> str:
    """A score, with its 95% interval where asked and always its run-to-run spread (`±4%`), so
    that a reader sees which rows this machine measures steadily. A workload's interval is its
    median's; a section's or the overall score's, of Geekbench's arithmetic on the workload
    medians (`analysis.scores._point_intervals`); where there is none, the cell says why."""
    if row is None or row.score is None:
        return ""
    text = f"{row.score:,.0f}"
    lo, hi = row.score_ci
    if interval:
        text += f" [{lo:,.0f}, {hi:,.0f}]" if lo is not None and hi is not None else f" [n/a: {row.n} blocks]"
    if row.spread is not None:
        text += f" ±{row.spread:.0%}" if row.spread >= 0.095 else f" ±{row.spread:.1%}"
    return text


def _memory(kib: float | None) -> str:
    return "" if kib is None else cells.quantity(kib / 1024, "MiB")


def _indexed(scores: Scores) -> dict[tuple[str, str], dict[tuple[str, str], ScoreRow]]:
    """(name, level) -> (mode, variant) -> row, in report order; the suite's totals left out."""
    out: dict[tuple[str, str], dict[tuple[str, str], ScoreRow]] = defaultdict(dict)
    for r in scores.rows:
        if r.level != "suite":
            out[(r.name, r.level)][(r.mode, r.variant)] = r
    return out


def _label(name: str, level: str) -> str:
    return name.removeprefix("cpu.") if level == "workload" else name


def _section_cell(row: ScoreRow) -> str:
    """A workload's section; on a section or overall row of a subset, what it is over (`3 of 21
    ran`), so that a partial score is never read as the suite's."""
    if row.level == "workload":
        return cells.section_title(row.section)
    return f"{row.covers.removesuffix(' workloads')} ran" if row.covers else ""


def _suite_value(row: ScoreRow) -> str:
    """A suite total: its wall time in seconds, or its peak memory."""
    if row.score is None:
        return ""
    return f"{row.score:.1f} s" if row.unit == "s" else _memory(row.score)


def _suite_line(scores: Scores, variant: str) -> str:
    rows = [r for r in scores.rows if r.level == "suite" and r.variant == variant]
    return ", ".join(f"{r.mode} {_suite_value(r)}" for r in rows if r.score is not None)


def _scaling_header(modes: list[str]) -> str:
    parallel = [MODE_TITLES[m] for m in modes if m != "single-core"]
    return f"scaling ({' / '.join(parallel)})" if len(parallel) > 1 else "scaling"


def single_variant(scores: Scores) -> Grid:
    variant = scores.reference
    modes = scores.modes
    grid = Grid(
        title=f"CPU suite scores, variant '{variant}' (the baseline machine scores 1000)",
        header=["workload", "section", *(MODE_TITLES[m] for m in modes), _scaling_header(modes), "peak memory"],
    )
    for (name, level), by_mode in _indexed(scores).items():
        any_row = next(iter(by_mode.values()))
        cols = [_label(name, level), _section_cell(any_row)]
        cols += [_score(by_mode.get((m, variant)), interval=True) for m in modes]
        found = [by_mode[(m, variant)] for m in modes if (m, variant) in by_mode]
        scaling = [f"{r.scaling:.0%}" for r in found if r.scaling is not None]
        memory = [r.peak_memory_kib for r in found]
        peak = max((k for k in memory if k is not None), default=None)
        grid.add([*cols, " / ".join(scaling), _memory(peak)], emphasis=level != "workload")
    grid.notes.append(_suite_line(scores, variant))
    grid.notes.append(
        "score [95% interval: of a workload's median; of a section's or the overall score, by a bootstrap over blocks; "
        "none under 6 blocks] ±spread (run to run, robust, of the per-block values); "
        "scaling = multi-core (and shared-task) score / single-core score / threads"
    )
    return grid


def comparison(scores: Scores, label: str) -> list[Grid]:
    ref = scores.reference
    others = [v for v in scores.variants if v != ref]
    grids = []
    indexed = _indexed(scores)
    for mode in scores.modes:
        grid = Grid(
            title=f"{MODE_TITLES[mode]} scores: {', '.join(others)} vs {ref}",
            header=["workload", "section", ref],
            shared=3,
            group=3,
        )
        for v in others:
            grid.verdict_columns.append(len(grid.header) + 2)
            grid.header += [v, f"{v} delta vs {ref} [{label}]", f"{v} verdict"]
        for (name, level), by_mode in indexed.items():
            base = by_mode.get((mode, ref))
            if base is None:
                continue
            cols = [
                _label(name, level),
                _section_cell(base),
                _score(base, interval=False),
            ]
            for v in others:
                row = by_mode.get((mode, v))
                cols += (
                    [
                        _score(row, interval=False),
                        cells.change(row.change, row.change_ci, log_scale=row.log_scale),
                        cells.verdict(row),
                    ]
                    if row
                    else ["", "", ""]
                )
            grid.add(cols, emphasis=level != "workload")
        grids.append(grid)
    suite = Grid(title="suite wall time and peak memory", header=["", ref], verdict_columns=[], names=1, shared=2, group=3)
    for v in others:
        suite.verdict_columns.append(len(suite.header) + 2)
        suite.header += [v, f"{v} delta vs {ref} [{label}]", f"{v} verdict"]
    by_metric: dict[str, dict[str, ScoreRow]] = defaultdict(dict)
    for r in scores.rows:
        if r.level == "suite":
            by_metric[r.mode][r.variant] = r
    for metric, rows in by_metric.items():
        cols = [metric, _suite_value(rows[ref]) if ref in rows else ""]
        for v in others:
            found = rows.get(v)
            cols += (
                [
                    _suite_value(found),
                    cells.change(found.change, found.change_ci, log_scale=found.log_scale),
                    cells.verdict(found),
                ]
                if found
                else ["", "", ""]
            )
        suite.add(cols)
    suite.notes.append(cells.shift_note(scores.rows))
    grids[0].notes.append("score ±spread: the run-to-run spread of its per-block values (robust)")
    grids.append(suite)
    return grids


def along_sweep(scores: Scores, sweep: Sweep, label: str) -> Grid:
    """The overall scores and the suite's peak memory at every sweep point, the reference first."""
    ref = scores.reference
    overall = {r.mode: r.covers for r in scores.rows if r.level == "overall"}
    modes = [m for m in ("single-core", "multi-core") if m in scores.modes and m in overall]
    covers = next((c for c in overall.values() if c), None)
    grid = Grid(
        title=f"overall scores{f' ({covers})' if covers else ''} along the sweep of {', '.join(sweep.parameters)}",
        header=list(sweep.parameters),
        names=len(sweep.parameters),
        group=3,
    )
    for title in [*(MODE_TITLES[m] for m in modes), "suite peak memory"]:
        grid.verdict_columns.append(len(grid.header) + 2)
        grid.header += [title, f"delta vs {ref} [{label}]", "verdict"]
    rows = {(r.mode, r.variant): r for r in scores.rows if r.level in ("overall", "suite")}
    for variant in [ref, *(v for v in scores.variants if v != ref)]:
        point = sweep.points.get(variant, {})
        cols = [str(point[f]) if f in point else ("(reference)" if variant == ref else variant) for f in sweep.parameters]
        for mode in [*modes, "suite peak memory"]:
            row = rows.get((mode, variant))
            value = (_suite_value(row) if mode == "suite peak memory" else _score(row, interval=False)) if row else ""
            delta = cells.change(row.change, row.change_ci, log_scale=row.log_scale) if row and variant != ref else ""
            cols += [value, delta, cells.verdict(row) if row and variant != ref else ""]
        grid.add(cols)
    return grid


def grids(scores: Scores, sweep: Sweep | None = None, label: str = "CI") -> list[Grid]:
    if len(scores.variants) == 1:
        return [single_variant(scores)]
    return [*comparison(scores, label), *([along_sweep(scores, sweep, label)] if sweep else [])]


def footer(report: Report) -> str:
    scores = report.scores
    assert scores is not None
    machine = scores.baseline_machine
    judged = sum(1 for r in scores.rows if r.verdict != "-")
    text = (
        f"suite version {scores.suite_version}; baseline (1000): {machine.get('cpu_model')}, "
        f"{machine.get('cpus_online')} CPUs, measured {scores.baseline_measured.get('date')}; "
        "section = geometric mean of its workloads, overall = "
        + ", ".join(f"{cells.section_title(k)} {w:.0%}" for k, w in scores.weights.items())
    )
    if any(r.covers for r in scores.rows if r.level == "overall"):
        text += " (over a subset: the weights of the sections that ran, scaled to sum to 1)"
    if judged:
        text += f"; {judged} comparisons, {report.correction} correction at alpha={report.alpha}; {cells.interval_note(report)}"
    return text + "; every metric of every run: --format json or csv"
