"""The app-cycle view: the page-reclaim study's tables (sections in its order, its labels) filled
with the report's own numbers, a blank cell (never 0) where a variant lacks a metric, chosen by
`auto` for an experiment that ran `memory.app_cycle` and refused in one line for one that did not."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from benchlab.errors import SpecError
from benchlab.locate import probe_path
from benchlab.report import app_cycle_grid, render, table
from benchlab.report.app_cycle_grid import MISSING, grid
from benchlab.report.views import report_grids, resolved
from benchlab.report_model import Experiment, MetricRow, Report
from benchlab.workloads.probe import catalogue
from tests.conftest import cli

ROOT = Path(__file__).resolve().parents[2]
SPEC = {"workloads": [{"name": "cycle", "builtin": "memory.app_cycle"}, {"name": "churn", "builtin": "alloc.churn"}]}
SECTIONS = ["Launch time", "Start types", "Kills", "Working-set refaults", "Reclaim efficiency", "Direct reclaim",
            "Swap and pressure"]  # fmt: skip  # no kswapd_cpu in these rows: its section is left out


def row(metric: str, unit: str, variant: str, median: float | None, base: float | None, *, workload: str = "cycle",
        change: float | None = None, verdict: str = "-") -> MetricRow:  # fmt: skip
    ci = (None, None) if change is None else (change - 0.02, change + 0.02)
    return MetricRow(workload=workload, metric=metric, unit=unit, direction="lower", variant=variant,
                     n=0 if median is None else 5, pairs=5, median=median, median_ci=(None, None), best=median,
                     baseline_median=base, baseline_best=base, change=change, change_ci=ci, change_ci90=ci,
                     log_scale=True, test="wilcoxon", p=None, q=None, verdict=verdict, blocks_needed=None,
                     family="primary", note=None, spread=None)  # fmt: skip


def rows(variant: str, scale: float) -> list[MetricRow]:
    """A cycle's rows of one variant: its medians are the baseline's times `scale`."""
    values = {
        ("real_time", "ns"): 1.5e6, ("launch_hot", "ms"): 0.8, ("launch_warm", "ms"): 2.0, ("launch_cold", "ms"): 9.0,
        ("launches_hot", "count"): 40, ("launches_warm", "count"): 12, ("launches_cold", "count"): 8,
        ("hot_cold", "ratio"): 5.0, ("kills", "count"): 10, ("kills_am", "count"): 6, ("kills_lmk", "count"): 4,
        ("kills_oom", "count"): 0, ("kills_lmk_low_mem_and_swap", "count"): 4, ("kills_lmk_not_responding", "count"): 0,
        ("refault_anon", "count"): 300, ("refault_file", "count"): 900, ("efficiency_kswapd", "%"): 32.6,
        ("efficiency_direct", "%"): 43.0, ("direct_reclaims", "count"): 50, ("direct_stall", "ms"): 120.0,
        ("direct_lt5ms", "count"): 45, ("pswpin", "count"): 1000, ("psi_some", "ms"): 70.0,
    }  # fmt: skip
    out = [row(m, u, variant, v * scale, v, change=scale - 1, verdict="better") for (m, u), v in values.items()]
    if variant == "thin":  # its kernel has no direct-reclaim efficiency: a row without values
        out = [r if r.metric != "efficiency_direct" else row("efficiency_direct", "%", "thin", None, 43.0) for r in out]
    return out


def report(spec: dict[str, object], variants: list[str]) -> Report:
    others = variants[1:]
    cycle = [r for i, v in enumerate(others) for r in rows(v, 0.934 - 0.1 * i)]
    churn = [row("real_time", "ns", v, 100.0, 110.0, workload="churn", change=-0.09, verdict="better") for v in others]
    return Report(
        experiment=Experiment(id=1, name="mglru", created_at=0.0, spec=spec, host=None, hosts={}, workload_versions={},
                              calibration={}),
        baseline=variants[0], variants=variants, alpha=0.05, margin=0.01, correction="bh", rows=[*cycle, *churn],
        geomean=[], scores=None, sweep=None, failed_runs=[], failed_benchmarks=[], warnings=[], runs=[],
    )  # fmt: skip


REPORT = report(SPEC, ["base", "mglru"])
THREE = report(SPEC, ["base", "mglru", "thin"])


def by_label(report: Report, variant: str = "mglru") -> dict[str, list[str]]:
    return {cols[0]: cols for cols in grid(report, "cycle", variant).rows}


def test_the_sections_come_in_the_studys_order_with_its_labels() -> None:
    g = grid(REPORT, "cycle", "mglru")
    assert [cols[0] for cols, emphasis in zip(g.rows, g.emphasis, strict=True) if emphasis] == SECTIONS
    labels = [cols[0] for cols in g.rows]
    kills = labels[labels.index("Kills") + 1 : labels.index("Working-set refaults")]
    # lmkd's reasons follow the total, only those with kills: not_responding is zero everywhere
    assert kills == ["activity manager", "low-memory killer", "kernel OOM", "total", "lmkd: low mem and swap"]
    starts = labels[labels.index("Start types") + 1 : labels.index("Kills")]
    assert starts == ["hot launches", "warm launches", "cold launches", "hot:cold"]  # no hot_warm, warm_cold rows
    assert g.title == "cycle: app cycle, mglru vs base (medians)"
    assert g.header == ["", "base", "mglru", "change [CI]", "verdict"]


def test_the_values_are_the_reports_medians_changes_and_verdicts() -> None:
    lines = by_label(REPORT)
    assert lines["overall"][1:] == ["1.500 ms", "1.401 ms", "-6.6% [-8.6, -4.6]", "better"]  # real_time, in ms
    assert lines["hot launches"][1:3] == ["40.00", "37.36"]  # a count says no unit: the label does
    assert lines["kswapd"][1:3] == ["32.60 %", "30.45 %"]


def test_a_metric_a_variant_lacks_is_a_blank_cell_with_a_note_never_zero() -> None:
    assert by_label(THREE, "mglru")["direct"][1:] == ["43.00 %", "40.16 %", "-6.6% [-8.6, -4.6]", "better"]
    assert by_label(THREE, "thin")["direct"][1:] == ["43.00 %", "", "", ""]
    assert MISSING in grid(THREE, "cycle", "thin").notes and MISSING not in grid(THREE, "cycle", "mglru").notes


def test_every_variant_gets_its_own_table_with_the_same_rows() -> None:
    grids = app_cycle_grid.grids(THREE)
    assert [g.title for g in grids] == ["cycle: app cycle, mglru vs base (medians)", "cycle: app cycle, thin vs base (medians)"]
    assert [cols[0] for cols in grids[0].rows] == [cols[0] for cols in grids[1].rows]
    assert app_cycle_grid.REST in grids[1].notes and app_cycle_grid.REST not in grids[0].notes  # once, under the last


def test_auto_picks_the_view_and_draws_the_other_workloads_after_it() -> None:
    assert resolved(REPORT, "auto") == "app-cycle"
    grids, _ = report_grids(REPORT)
    assert [g.title for g in grids] == ["cycle: app cycle, mglru vs base (medians)", "mglru: mglru vs base"]
    assert {cols[0] for cols in grids[1].rows} == {"churn"}  # the ordinary metric table, the cycle left out
    plain = report({"workloads": [{"name": "cycle", "builtin": "alloc.churn"}]}, ["base", "mglru"])
    assert resolved(plain, "auto") == "metrics"


def test_the_view_is_refused_in_one_line_for_an_experiment_without_an_app_cycle() -> None:
    plain = report({"workloads": [{"name": "cycle", "command": ["true"]}]}, ["base", "mglru"])
    with pytest.raises(SpecError, match="no app cycle") as caught:
        render(plain, "table", "app-cycle")
    assert caught.value.exit_code == 2 and "\n" not in str(caught.value)


def test_three_variants_fit_a_terminal_of_100_columns_a_row_a_line() -> None:
    buffer = io.StringIO()
    Console(file=buffer, width=100, color_system=None).print(table.renderable(THREE, "app-cycle"))
    lines = buffer.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 100
    lmkd = next(line for line in lines if "lmkd: low mem and swap" in line)
    assert "3.736" in lmkd and "-6.6% [-8.6, -4.6]" in lmkd and "better" in lmkd  # a row on one line, nothing wrapped


def test_markdown_draws_the_sections_as_emphasised_rows() -> None:
    text = render(REPORT, "md")
    assert "| **Launch time** |" in text and "| overall | 1.500 ms | 1.401 ms |" in text


def _probe_with_the_app_cycle() -> str | None:
    """The installed probe, or this checkout's own build where the installed one predates the app cycle."""
    for path in (probe_path(), str(ROOT / "probe" / "target" / "release" / "benchlab-probe")):
        listed = subprocess.run([path, "list", "--format", "json"], capture_output=True, text=True, check=False)
        if listed.returncode == 0 and "memory.app_cycle" in {w["name"] for w in json.loads(listed.stdout)["workloads"]}:
            return path
    return None


def test_a_real_cycle_reads_in_the_view_through_the_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    probe = _probe_with_the_app_cycle()
    if probe is None:
        pytest.skip("no benchlab-probe here has memory.app_cycle (build the probe)")
    monkeypatch.setenv("BENCHLAB_PROBE", probe)
    cycle = "memory.app_cycle apps=4 iterations=2 anon=4m code=256k framework=1m dwell=10"
    cli("compare", "-w", cycle, "-V", "a", "-V", "b", "-n", "2", "--name", "cycle", check=True, timeout=120)
    text = cli("report", "cycle", "--format", "md", check=True).stdout
    assert "### memory.app_cycle: app cycle, b vs a (medians)" in text
    assert text.index("**Launch time**") < text.index("**Start types**") < text.index("**Kills**")
    assert "| overall |" in text and "| cold launches |" in text


def test_every_metric_the_probe_declares_has_its_line_or_is_named_as_elsewhere() -> None:
    declared = {m["name"] for m in catalogue()["memory.app_cycle"]["metrics"]}
    shown = {line.metric for section in app_cycle_grid.SECTIONS for line in section.lines}
    assert declared - shown == set(app_cycle_grid.ELSEWHERE)
    assert shown <= declared
