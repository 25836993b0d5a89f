"""The report in the layout of Go's benchstat (golang.org/x/perf/cmd/benchstat), which many readers
know at a glance: a header naming what was compared, then per metric a table with a row per
workload and a column per variant, `median ± spread` (the 95% interval of the median, as a share
of it), and beside each compared variant its change `vs base` with `(p=... n=...)`, or `~` where
the change is not shown; a geomean line closes each table; footnotes say what a mark means.

What differs from benchstat is what decides: a change is shown only where benchlab's verdict is
better or worse (its interval at its family's corrected level clear of zero, which is its adjusted
p below alpha, see stats/judge.py), not wherever p < 0.05; `~` rows carry a footnote saying whether they are the
same within the margin, unclear, or not judged. The p shown is the test's own, before correction.
`n` is the runs of each side (`n=10+12`), or the pairs where runs were paired by block.

Written by hand: benchstat is a Go program reading Go's benchmark format, with no library to
render someone else's numbers in its layout."""

from __future__ import annotations

import math
from collections import defaultdict

from benchlab.report import cells, safe
from benchlab.report.choices import View
from benchlab.report_model import MetricRow, Report, side_lines

SI = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"), (1e-12, "p")]
BINARY = [(2.0**40, "Ti"), (2.0**30, "Gi"), (2.0**20, "Mi"), (2.0**10, "Ki"), (1.0, "")]
# units shown in a base unit with a prefix, as benchstat shows sec/op and B/op: (factor to the base unit, base, prefixes)
BASE_UNITS = {
    "ns": (1e-9, "s", SI), "us": (1e-6, "s", SI), "ms": (1e-3, "s", SI), "s": (1.0, "s", SI), "KiB": (1024.0, "B", BINARY),
}  # fmt: skip
SUPERSCRIPTS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
NO_INTERVAL = "too few runs for a 95% interval of the median (6 are needed)"
SET_DIFFERS = "the workloads differ from the baseline's; geomeans may not be comparable"
SHIFT = "a raw shift over the baseline's median, not a ratio: the metric has zero or negative values"


def render(report: Report, view: View = "auto") -> str:
    header = side_lines(report.experiment)
    lines = header or [f"experiment: {report.experiment.name}", *_host_lines(report)]
    lines = [safe.text(line, limit=safe.LINE_MAX) for line in lines]
    for (metric, unit), by_workload in _tables(report).items():
        lines += ["", *_Table(report, metric, unit, by_workload).lines()]
    if report.scores is not None:
        lines += ["", "CPU-suite scores are not drawn in this layout (see the table format)"]
    trailer = [f"failed: {line}" for line in cells.failure_lines(report)]
    trailer += [f"warning: {line}" for line in report.warnings if line not in header]
    if trailer:
        lines += ["", *(safe.text(line, limit=safe.LINE_MAX) for line in trailer)]
    return "\n".join(lines) + "\n"


def _host_lines(report: Report) -> list[str]:
    """benchstat's `goos:`/`cpu:` lines: the machine the experiment ran on, where recorded."""
    host = report.experiment.host or {}
    facts = [("host", host.get("hostname")), ("cpu", host.get("cpu_model")), ("kernel", host.get("kernel"))]
    return [f"{key}: {value}" for key, value in facts if value]


def _tables(report: Report) -> dict[tuple[str, str], dict[str, dict[str, MetricRow]]]:
    """Rows by (metric, unit), then workload, then variant, in the report's order."""
    tables: dict[tuple[str, str], dict[str, dict[str, MetricRow]]] = defaultdict(lambda: defaultdict(dict))
    for row in report.rows:
        tables[(row.metric, row.unit)][row.workload][row.variant] = row
    return tables


def _number(value: float, unit: str) -> tuple[str, str]:
    """A value with 4 significant digits and a prefix, and the unit the column states."""
    factor, base, prefixes = BASE_UNITS.get(unit, (1.0, unit, SI))
    x = value * factor
    if x == 0 or not math.isfinite(x):
        return f"{x:g}", base
    scale, prefix = next(((s, p) for s, p in prefixes if abs(x) >= s), prefixes[-1])
    shown = x / scale
    digits = max(0, 3 - int(math.floor(math.log10(abs(shown)))))
    return f"{shown:.{digits}f}{prefix}", base


class _Table:
    """One metric's table; footnotes are numbered in the order their marks first appear."""

    def __init__(self, report: Report, metric: str, unit: str, by_workload: dict[str, dict[str, MetricRow]]) -> None:
        self.report, self.metric, self.unit, self.by_workload = report, metric, unit, by_workload
        self.variants = cells.compared_variants(report)
        self.notes: dict[str, str] = {}  # footnote text -> its mark

    def mark(self, note: str) -> str:
        if note not in self.notes:
            self.notes[note] = str(len(self.notes) + 1).translate(SUPERSCRIPTS)
        return " " + self.notes[note]

    def centre(self, median: float | None, ci: tuple[float | None, float | None]) -> str:
        """`median ± spread`: the half-width of the median's 95% interval as a share of it."""
        if median is None:
            return "n/a"
        text, _ = _number(median, self.unit)
        lo, hi = ci
        if lo is None or hi is None:
            return f"{text} ± ∞{self.mark(NO_INTERVAL)}"
        if median == 0:
            return f"{text} ± {'0%' if lo == hi == 0 else '∞'}"
        return f"{text} ± {100 * max(hi - median, median - lo) / abs(median):.0f}%"

    def delta(self, row: MetricRow) -> tuple[str, str]:
        """The change (or `~`) and what follows it: `(p=... n=...)` and any footnote mark."""
        n = str(row.pairs) if row.pairs else str(row.n) if row.baseline_n in (None, row.n) else f"{row.baseline_n}+{row.n}"
        tested = f"(p={row.p:.3f} n={n})" if row.p is not None else f"(n={n})"
        if row.verdict in ("better", "worse") and row.change is not None:
            shift = "" if row.log_scale else self.mark(SHIFT)
            return f"{row.change * 100:+.2f}%", tested + shift
        return "~", tested + self.mark(self._why_not_shown(row))

    def _why_not_shown(self, row: MetricRow) -> str:
        if row.verdict == "same":
            margin = f"±{self.report.margin:.1%} unless the metric sets its own"
            return f"same: the 90% interval of the change lies within the margin ({margin})"
        if row.verdict == "-":
            return "not judged: a characteristic (memory, faults, switches), or the only variant"
        if (row.note or "").startswith("not tested"):
            return f"unclear: {row.note}"
        return "unclear: neither a change nor sameness is shown yet; the table format says how many runs would likely decide"

    def lines(self) -> list[str]:
        configs = [self.report.baseline, *self.variants]
        _, base_unit = _number(1.0, self.unit)
        rows: list[tuple[str, list[str], list[tuple[str, str]]]] = []
        for workload, by_variant in self.by_workload.items():
            first = next(iter(by_variant.values()))
            values = [self.centre(first.baseline_median, first.baseline_median_ci)]
            deltas = []
            for v in self.variants:
                row = by_variant.get(v)
                values.append(self.centre(row.median, row.median_ci) if row else "")
                deltas.append(self.delta(row) if row else ("", ""))
            rows.append((safe.text(workload), values, deltas))
        geomean = self.geomean(configs)
        if geomean:
            rows.append(("geomean", *geomean))
        return self.layout([safe.text(c) for c in configs], f"{safe.text(self.metric)} ({safe.text(base_unit or '-')})", rows)

    def geomean(self, configs: list[str]) -> tuple[list[str], list[tuple[str, str]]] | None:
        """benchstat's closing line: each column's geometric mean of its medians (positive ones), and
        the ratio of each to the baseline's; descriptive, not tested; left out over one workload."""
        columns: list[list[float]] = [[] for _ in configs]
        for by_variant in self.by_workload.values():
            first = next(iter(by_variant.values()))
            columns[0].append(first.baseline_median or 0.0)
            for i, v in enumerate(self.variants, start=1):
                row = by_variant.get(v)
                columns[i].append((row.median or 0.0) if row else 0.0)
        if len(self.by_workload) < 2:
            return None
        kept = [[x for x in column if x > 0] for column in columns]
        means = [math.exp(sum(map(math.log, c)) / len(c)) if c else None for c in kept]
        differs = any(len(c) != len(kept[0]) for c in kept)
        mark = self.mark(SET_DIFFERS) if differs else ""
        values = [(_number(m, self.unit)[0] if m is not None else "n/a") + mark for m in means]
        base = means[0]
        deltas = [(f"{(m / base - 1) * 100:+.2f}%" if m is not None and base else "n/a", "") for m in means[1:]]
        return values, deltas

    def layout(self, configs: list[str], unit: str, rows: list[tuple[str, list[str], list[tuple[str, str]]]]) -> list[str]:
        """benchstat's grid: two header lines with `│` between the columns of each variant, rows
        with spaces there; the change right-aligned, its `(p=... n=...)` after it."""
        name_w = max(len(name) for name, _, _ in rows)
        value_w = [max(len(unit), *(len(r[1][i]) for r in rows)) for i in range(len(configs))]
        pct_w = [max(len(r[2][i][0]) for r in rows) for i in range(len(self.variants))]
        rest_w = [max(len("vs base") - pct_w[i] - 1, *(len(r[2][i][1]) for r in rows)) for i in range(len(self.variants))]

        def group(i: int, value: str, delta: tuple[str, str] | None) -> str:
            text = f" {value.rjust(value_w[i])} "
            if i and delta is not None:
                text += f" {delta[0].rjust(pct_w[i - 1])} {delta[1].ljust(rest_w[i - 1])} "
            return text

        for i, config in enumerate(configs):  # a long name widens its column
            value_w[i] += max(0, len(config) + 2 - len(group(i, "", ("", "") if i else None)))
        widths = [len(group(i, "", ("", "") if i else None)) for i in range(len(configs))]
        top = " " * name_w + "│" + "│".join(c.center(w) for c, w in zip(configs, widths, strict=True)) + "│"
        second = (
            " " * name_w
            + "│"
            + "│".join(
                f" {unit.center(value_w[i])} " + (f" {'vs base'.ljust(pct_w[i - 1] + 1 + rest_w[i - 1])} " if i else "")
                for i in range(len(configs))
            )
            + "│"
        )
        body = [
            (name.ljust(name_w) + " " + " ".join(group(i, v, d[i - 1] if i else None) for i, v in enumerate(values))).rstrip()
            for name, values, d in rows
        ]
        notes = [f"{mark.strip()} {safe.text(text)}" for text, mark in self.notes.items()]
        return [top, second, *body, *([""] + notes if notes else [])]
