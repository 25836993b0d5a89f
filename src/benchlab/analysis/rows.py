"""The judge's rows as the report model's: what `stats.judge` computed, in the typed form every
renderer reads (NaN and infinities as None, intervals as pairs). The conversion lives here, not on
the rows, so the statistics core knows nothing of the report model or pydantic."""

from __future__ import annotations

from benchlab import report_model as model
from benchlab.report_model import number, pair
from benchlab.stats.judge import GeomeanRow, Row


def metric_row(row: Row) -> model.MetricRow:
    return model.MetricRow(
        workload=row.workload, metric=row.metric, unit=row.unit, direction=row.direction, variant=row.variant,
        n=row.n, pairs=row.pairs, median=number(row.median), median_ci=pair(row.median_ci),
        baseline_median=number(row.baseline_median), baseline_n=row.baseline_n or None,
        baseline_median_ci=pair(row.baseline_median_ci), change=number(row.change), change_ci=pair(row.change_ci),
        change_ci_level=row.change_ci_level, change_ci95=pair(row.change_ci95),
        change_ci90=pair(row.change_ci90), log_scale=row.log_scale, test=row.test, p=number(row.p),
        q=number(row.q), verdict=row.verdict, blocks_needed=row.blocks_needed, family=row.family,
        note=row.note or None, spread=number(row.estimate.spread) if row.estimate else None,
        best=number(row.best), baseline_best=number(row.baseline_best), change_note=row.change_note or None,
    )  # fmt: skip


def geomean_row(row: GeomeanRow) -> model.GeomeanRow:
    return model.GeomeanRow(
        variant=row.variant, direction=row.direction, metrics=row.metrics, blocks=row.blocks,
        change=number(row.change), change_ci=pair(row.change_ci), change_ci_level=row.change_ci_level,
        change_ci95=pair(row.change_ci95), test=row.test, p=number(row.p),
        q=number(row.q), verdict=row.verdict, blocks_needed=row.blocks_needed, family=row.family,
        note=row.note or None,
    )  # fmt: skip
