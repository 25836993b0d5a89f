"""The terminal report fits 100 columns for any number of variants, whatever their names, and
cuts nothing: every value whole on one line (a row's values together), every name whole,
folded onto more lines where it is longer than its column, never an ellipsis."""

from __future__ import annotations

import io
import re

import pytest
from rich.cells import cell_len
from rich.console import Console

from benchlab.report import layout, safe, table
from benchlab.report.grid import Grid
from benchlab.report.views import report_grids
from benchlab.report_model import (
    Experiment,
    GeomeanRow,
    MetricRow,
    Report,
    ScoreRow,
    Scores,
    Sweep,
    SweepFit,
)
from tests.unit.test_app_cycle_grid import SPEC as CYCLE_SPEC
from tests.unit.test_app_cycle_grid import report as cycle_report

LONG = "jemalloc-background-thread-narenas-4-dirty-decay-ms-1000"  # one word, wider than any name column
HOSTILE = ["[bold]x[/bold]", "\x1b[31mred\x1b[0m", "\u202eevil", "変種-ワイド", "a|b`c*"]
METRICS = [  # (workload, metric, unit, baseline median, family): the widths of the demo's rows
    ("alloc.churn", "items_per_second", "1/s", 10_698_054.0, "primary"),
    ("alloc.churn", "real_time", "ns", 187.0, "primary"),
    ("alloc.churn", "wall", "s", 0.1896, "secondary"),
    ("alloc.churn", "involuntary_switches", "count", 22.5, "characteristic"),
    ("ipc.pipe.pingpong", "bytes_per_second", "B/s", 52_282_566.0, "primary"),
    ("ipc.pipe.pingpong", "latency_p99", "ns", 90_524.0, "primary"),
    ("ipc.pipe.pingpong", "user", "s", 0.01706, "secondary"),
    ("ipc.pipe.pingpong", "major_faults", "count", 0.0, "characteristic"),
]


def variants(n: int) -> list[str]:
    """n compared variants: long names, and every hostile name among them from 8 on."""
    names = [f"{LONG}-{i}" if i % 2 else f"v{i}" for i in range(n)]
    return names if n < 8 else [*names[: n - len(HOSTILE)], *(f"{h}{i}" for i, h in enumerate(HOSTILE))]


def metric_row(workload: str, metric: str, unit: str, base: float, family: str, variant: str, i: int) -> MetricRow:
    """Changes and verdicts as wide as a report has them: +1006.2% [+757.2, +1518.9], unclear (~14384 blocks)."""
    change = (-0.9, 10.062, 0.004, -0.5)[i % 4]
    ci = (None, None) if i % 5 == 3 else (change - 0.05 * (1 + abs(change)) - i / 1000, change + 5.1)
    log_scale = base != 0
    return MetricRow(workload=workload, metric=metric, unit=unit, direction="lower", variant=variant, n=10,
                     pairs=2 if ci[0] is None else 10, median=base * (1 + change), median_ci=(None, None),
                     best=base * (1 + change) * 0.9, baseline_median=base, baseline_best=base * 0.95,
                     change=change if log_scale else 0.0, change_ci=ci if log_scale else (0.0, 0.0),
                     change_ci90=(None, None), log_scale=log_scale, test="wilcoxon", p=None, q=None,
                     verdict=("better", "worse", "unclear", "same")[i % 4], blocks_needed=14384 if i % 4 == 2 else None,
                     family=family, note=None, spread=None)  # fmt: skip


def experiment(name: str, spec: dict[str, object] | None = None) -> Experiment:
    return Experiment(id=1, name=name, created_at=0.0, spec=spec or {}, host=None, hosts={}, workload_versions={},
                      calibration={})  # fmt: skip


def metrics_report(n: int) -> Report:
    others = variants(n)
    rows = [metric_row(*m, v, i + j) for j, m in enumerate(METRICS) for i, v in enumerate(others)]
    rows += [metric_row("cmd", t, "s", 1.2, "primary", v, i) for t in ("wall", "user", "sys") for i, v in enumerate(others)]
    rows.append(metric_row("sys.build", "real_time", "ns", 1_134_895_790.0, "primary", others[0], 0))
    geomean = [GeomeanRow(variant=v, direction="lower", metrics=4, blocks=10, change=0.05 * i, change_ci=(0.0, 0.1 * i),
                          test="t", p=None, q=None, verdict="unclear", blocks_needed=174, family="primary", note=None)
               for i, v in enumerate(others)]  # fmt: skip
    return Report(experiment=experiment("demo-20261127-011659"), baseline="base", variants=["base", *others], alpha=0.05,
                  margin=0.01, correction="bh", rows=rows, geomean=geomean, scores=None, sweep=None, failed_runs=[],
                  failed_benchmarks=[], warnings=[], runs=[])  # fmt: skip


def sweep_report(n: int) -> Report:
    base = metrics_report(n)
    others = variants(n)
    points = {v: {"env.MALLOC_ARENA_MAX": i, "threads": f"{LONG}-{i}" if i % 3 == 1 else 2**i} for i, v in enumerate(others)}
    fits = [SweepFit(workload=w, metric=m, direction="lower", x="value", intercept=0.02, intercept_ci=(0.01, 0.03),
                     slope=0.4, slope_ci=(0.35, 0.45), n=120, blocks=12) for w, m, *_ in METRICS]  # fmt: skip
    sweep = Sweep(parameters=["env.MALLOC_ARENA_MAX", "threads"], fit="value", reference="base", points=points, fits=fits)
    return base.model_copy(update={"sweep": sweep})


def scores_report(n: int) -> Report:
    others = variants(n)

    def score(level: str, name: str, section: str | None, mode: str, variant: str, value: float, i: int) -> ScoreRow:
        return ScoreRow(level=level, name=name, section=section, mode=mode, variant=variant, unit="score", n=10,
                        score=value * (1 + i / 10), score_ci=(value * 0.9, value * 1.1), log_scale=True,
                        peak_memory_kib=1_200_000.0, threads=2, scaling=0.98, change=0.1 * i, change_ci=(0.0, 0.2 * i),
                        test="t", p=None, q=None, verdict="unclear", blocks_needed=14384, family="scored", note=None)  # fmt: skip

    rows = [
        score(level, name, section, mode, v, 1234.0, i)
        for mode in ("single-core", "multi-core")
        for level, name, section in [
            ("workload", "cpu.xz", "integer"),
            ("workload", "cpu.nbody", "float"),
            ("section", "integer", None),
            ("overall", "overall", None),
        ]  # fmt: skip
        for i, v in enumerate(["base", *others])
    ]
    rows += [score("suite", "suite", None, "wall", v, 812.4, i) for i, v in enumerate(["base", *others])]
    scores = Scores(suite="cpu", suite_version=1, baseline_machine={"cpu_model": "x", "cpus_online": 2},
                    baseline_measured={"date": "2026-11-24"}, weights={"integer": 0.5, "float": 0.5}, reference="base",
                    variants=["base", *others], modes=["single-core", "multi-core"], workloads=["cpu.xz", "cpu.nbody"],
                    rows=rows)  # fmt: skip
    return metrics_report(n).model_copy(update={"rows": [], "geomean": [], "scores": scores})


def app_cycle_report(n: int) -> Report:
    return cycle_report(CYCLE_SPEC, ["base", *variants(n)])


REPORTS = {"metrics": metrics_report, "times": metrics_report, "sweep": sweep_report, "scores": scores_report,
           "app-cycle": app_cycle_report}  # fmt: skip


def drawn(block: layout.Block, width: int) -> list[str]:
    buffer = io.StringIO()
    Console(file=buffer, width=width, color_system=None).print(table.draw(block))
    return buffer.getvalue().splitlines()


def first_column(lines: list[str], width: int) -> list[str]:
    """Column 0's text on each line (tables have no outer edge: it starts each line)."""
    return [line[:width].strip() for line in lines]


def whole_in(name: str, column: list[str]) -> bool:
    """The name is in consecutive lines of the column, folded or wrapped at a space, nothing left out."""
    want = re.sub(r"\s", "", name)
    for start in range(len(column)):
        joined = ""
        for piece in column[start:]:
            joined += re.sub(r"\s", "", piece)
            if joined == want:
                return True
            if not want.startswith(joined):
                break
    return False


def check(grid: Grid, width: int) -> None:
    shown = table._escaped(grid)
    for block in layout.blocks(shown, width):
        assert layout.table_width(block.widths) <= width
        lines = drawn(block, width)
        assert lines and max(cell_len(line) for line in lines) <= width and "…" not in "".join(lines)
        body = lines[next(i for i, line in enumerate(lines) if "━" in line) + 1 :]
        for cols in block.grid.rows:
            values = [c for c in cols[block.grid.names :] if c]
            if values:  # a row's values whole and together on one line, in order
                pattern = r".*".join(re.escape(v) for v in values)
                assert any(re.search(pattern, line) for line in body), (values, block.grid.title)
            assert whole_in(cols[0], first_column(body, block.widths[0])), (cols[0], block.grid.title)
    for cols in shown.rows:  # every value of the grid is in some block
        for value in cols[shown.names :]:
            assert not value or any(value in row for b in layout.blocks(shown, width) for row in b.grid.rows)


@pytest.mark.parametrize("n", [1, 2, 8, 20])
@pytest.mark.parametrize("view", REPORTS)
def test_every_view_fits_100_columns_for_any_number_of_variants_cutting_nothing(view: str, n: int) -> None:
    report = REPORTS[view](n)
    grids, _ = report_grids(report, view)  # type: ignore[arg-type]
    for grid in grids:
        check(grid, layout.WIDTH)
    text = table.render(report, view)  # type: ignore[arg-type]
    assert max(cell_len(line) for line in text.splitlines()) <= layout.WIDTH and "…" not in text
    assert "\x1b" not in text and "\u202e" not in text  # hostile names escaped, as everywhere


def test_a_grid_that_fits_is_one_table_a_row_a_line_with_the_workloads_as_sections_if_need_be() -> None:
    text = table.render(metrics_report(1), "times").splitlines()
    assert not any("(1 of" in line for line in text)
    assert text[1].startswith("workload / time ") and text[3].startswith("alloc.churn ")  # a section row
    (row,) = [line for line in text if line.startswith("real_time ") and "1.135 s" in line]
    assert re.search(r"1\.078 s .*1\.135 s .*0\.1021 s .*0\.1135 s .*10\.00x faster \[", row)


def test_a_wide_grid_splits_into_blocks_repeating_the_names_and_the_baseline() -> None:
    blocks = layout.blocks(table._escaped(report_grids(metrics_report(2), "times")[0][0]), 110)
    assert [b.grid.title.rsplit(" (", 1)[1] for b in blocks] == ["1 of 2)", "2 of 2)"]
    for block, variant in zip(blocks, variants(2), strict=True):
        assert block.grid.header[:3] == ["workload / time", "base best", "base median"]  # the workload as sections
        assert block.grid.header[3:] == [f"{variant} best", f"{variant} median", f"{variant} vs base [CI]"]


def test_a_wider_terminal_gets_fewer_blocks() -> None:
    grid = table._escaped(report_grids(metrics_report(8), "metrics")[0][0])
    assert len(layout.blocks(grid, 100)) > len(layout.blocks(grid, 250)) > len(layout.blocks(grid, 1000)) == 1


def test_where_no_layout_fits_names_fold_inside_words_before_any_value_folds() -> None:
    grid = table._escaped(report_grids(metrics_report(1), "metrics")[0][0])
    blocks = layout.blocks(grid, 85)  # a variant's group and its names need 89 columns at the least
    assert [b.grid.header[1:] for b in blocks] == [["base (median)"], ["v0 (median)", "v0 change [CI]", "v0 verdict"]]
    for block in blocks:
        values = [max(cell_len(r[i]) for r in block.grid.rows) for i in range(1, len(block.grid.header))]
        assert all(w >= v for w, v in zip(block.widths[1:], values, strict=True))  # no value folds
        assert layout.table_width(block.widths) <= 85
    assert layout.NAME_FLOOR <= blocks[1].widths[0] < len("involuntary_switches")
    text = "\n".join(drawn(blocks[1], 85))
    assert "+1006.2% [+" in text and "unclear (~14384 blocks)" in text


def test_a_pipe_gets_100_columns_and_a_terminal_its_own_width() -> None:
    report = metrics_report(2)
    narrow = table.render(report, "metrics")
    buffer = io.StringIO()
    Console(file=buffer, width=250, color_system=None).print(table.renderable(report, "metrics", width=250))
    wide = buffer.getvalue()
    assert max(map(cell_len, narrow.splitlines())) <= 100 < max(map(cell_len, wide.splitlines())) <= 250
    assert narrow == table.render(report, "metrics")  # the same bytes every time


def test_hostile_names_are_escaped_before_they_are_measured() -> None:
    grid = Grid(title="t", header=["workload", "metric", "base"])
    grid.add(["\x1b[31mw", "m", "1 s"])
    grid.add(["\x1b[31mw", "n", "2 s"])
    (block,) = layout.blocks(table._escaped(grid), 100)
    assert block.grid.rows[0][0] == safe.text("\x1b[31mw") and block.widths[0] >= cell_len("\\x1b[31mw")


def test_a_grid_without_rows_is_drawn_as_its_header() -> None:
    (block,) = layout.blocks(Grid(title="t", header=["workload", "metric", "base (median)"]), 100)
    assert block.widths == [8, 6, 13] and drawn(block, 100)[0].startswith("workload │ metric │ base (median)")
