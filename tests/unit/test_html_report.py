"""The HTML report (`--format html`): one self-contained page drawn from the report model, its
plots inline SVG, its data embedded as JSON, every stored string escaped. The experiments are
run by the runner with an injected executor (no real process), hostile names written into the
report as a bundle from elsewhere could carry them."""

from __future__ import annotations

import json
import re
import warnings
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from benchlab.analysis.analyze import analyze
from benchlab.report import needs_runs, render
from benchlab.report.html import data, plots
from benchlab.report_model import Report
from benchlab.store import Store
from tests.conftest import cli
from tests.unit.test_runner import FakeExecutor, runner, spec

HOSTILE = "</script><script>alert(1)</script><b title=\"x\">\x1b[31m$x^2$ & \u202e'q'<!--"


class Tags(HTMLParser):
    """Every start tag of a page, and its data script's text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.script = ""
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, text: str) -> None:
        if self._in_script:
            self.script += text


def report_of(tmp_path: Path, **extra: Any) -> Report:
    """Two command workloads, variant b 10% slower than a, every run included (as `--format html` loads it)."""
    store = Store(str(tmp_path / "r.db"))
    workloads = [{"name": "t", "command": ["true"]}, {"name": "u", "command": ["true"]}]
    exp = runner(store, FakeExecutor()).run(spec(**{"workloads": workloads, "blocks": 10, **extra}))
    return analyze(store.load(exp, every_record=True)).report()


def renamed(report: Report, names: dict[str, str], failed_message: str | None = None) -> Report:
    """The report with names replaced everywhere, as a bundle from another machine could carry them."""

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {names.get(k, k): walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return names.get(value, value) if isinstance(value, str) else value

    document = walk(json.loads(report.to_json()))
    if failed_message is not None:
        for run in document["failed_runs"]:
            run["message"] = failed_message
            run["stderr_tail"] = failed_message
    return Report.model_validate(document)


def svgs(page: str) -> list[str]:
    return re.findall(r"<svg .*?</svg>", page, flags=re.S)


def embedded(page: str) -> dict[str, Any]:
    parser = Tags()
    parser.feed(page)
    result: dict[str, Any] = json.loads(parser.script)
    return result


def test_hostile_names_are_text_in_the_page_its_plots_and_its_data(tmp_path: Path) -> None:
    report = report_of(tmp_path, variants=[{"name": "a"}, {"name": "b", "env": {"FAKE_FAIL": "1"}}, {"name": "c"}])
    names = {"fake": f"{HOSTILE}e", "t": f"{HOSTILE}w", "c": f"{HOSTILE}v", "wall": f"{HOSTILE}m"}
    page = render(renamed(report, names, failed_message=HOSTILE), "html")
    parser = Tags()
    parser.feed(page)
    assert parser.tags.count("script") == 1 and "b" not in parser.tags  # no markup from a name became an element
    assert page.count("</script>") == 1 and "<!--" not in page
    assert [c for c in page if not c.isprintable() and c != "\n"] == []  # no escape, no bidi override, raw
    assert "\\x1b[31m$x^2$ &amp; \\u202e&#x27;q&#x27;" in page  # shown escaped, `$` not read as mathtext
    for svg in svgs(page):  # each plot is well-formed XML whatever its labels say
        ET.fromstring(svg.replace("<svg ", '<svg xmlns:xlink="http://www.w3.org/1999/xlink" ', 1))
    assert any("\\x1b[31m$x^2$ &amp;" in svg for svg in svgs(page))  # a hostile variant name labels a plot
    document = json.loads(parser.script)  # the data survives exactly
    assert document["report"]["experiment"]["name"] == names["fake"]
    assert {r["variant"] for r in document["report"]["runs"]} == {"a", "b", names["c"]}
    assert all(r["message"] == HOSTILE for r in document["report"]["failed_runs"])


def test_the_embedded_data_is_the_json_report_with_every_run(tmp_path: Path) -> None:
    assert needs_runs("html") and needs_runs("table", "html")  # the command loads every run for it
    report = report_of(tmp_path)
    document = embedded(render(report, "html"))
    assert document["schema"] == data.SCHEMA and document["thinning"]["every"] == 1
    assert document["report"]["schema"] == "benchlab.report/2"
    assert document["report"]["rows"] == json.loads(report.to_json())["rows"]
    runs = document["report"]["runs"]
    assert len(runs) == len(report.runs) == 40
    assert [(r["workload"], r["variant"], r["block"], r["metrics"]) for r in runs] == [
        (r["workload"], r["variant"], r["block"], r["metrics"]) for r in report.runs
    ]
    assert all(r["details"] is None for r in runs)


def test_a_page_has_one_plot_per_outcome_metric_and_nothing_from_outside(tmp_path: Path) -> None:
    report = report_of(tmp_path)
    page = render(report, "html")
    labels = [re.search(r'aria-label="([^"]*)"', s)[1] for s in svgs(page)]  # type: ignore[index]
    assert labels == ["t: wall", "u: wall"]  # a command's outcome is its wall time; CPU time and memory are tabled
    assert not re.search(r"https?://|\bsrc=|<link|<img|@import|url\((?!#)", page)
    assert "<h2>Summary</h2>" in page and page.index("<h2>Summary</h2>") < page.index("<svg ")


def test_the_summary_says_what_changed_by_how_much_and_how_sure(tmp_path: Path) -> None:
    page = render(report_of(tmp_path), "html")
    summary = page[page.index("What changed") : page.index("All comparisons")]
    assert summary.count('class="verdict v-worse"') == 7  # wall, user and sys of t and u, and the geometric mean
    assert '<td class="name">t</td><td class="name">wall</td><td class="name">b</td><td>1.000 s</td><td>1.100 s</td>' in summary
    assert "+10.0% [+10.0, +10.0]" in summary
    counts = page[page.index("All comparisons") : page.index("</section>")]
    assert '<td class="name">b</td><td>0</td><td>7</td><td>0</td><td>0</td><td>10</td>' in counts  # 10 not judged


def test_latency_percentiles_get_a_plot_of_their_own(tmp_path: Path) -> None:
    report = report_of(tmp_path)
    for i, run in enumerate(report.runs):
        if run["workload"] == "t":
            run["metrics"].update({"x/other:p50": 100.0 + i, "x/other:p99": 300.0 + i, "x/other:worst": 900.0 + i})
    page = render(report, "html")
    labels = [re.search(r'aria-label="([^"]*)"', s)[1] for s in svgs(page)]  # type: ignore[index]
    assert "t: x/other percentiles" in labels
    (svg,) = [s for s in svgs(page) if "percentiles" in s]
    assert [t for t in ("p50", "p99", "worst") if f">{t}</text>" in svg] == ["p50", "p99", "worst"]


def test_large_experiments_are_summarised_and_the_page_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = report_of(tmp_path)
    monkeypatch.setattr(data, "RUNS_BYTES_MAX", 2000)
    monkeypatch.setattr(plots, "STRIP_MAX", 3)
    monkeypatch.setattr(plots, "ORDER_MAX", 3)
    page = render(report, "html")
    thinning = embedded(page)["thinning"]
    every = thinning["every"]
    assert (
        every > 1
        and f"one block in {every} (blocks 0, {every}, {2 * every}, ...), whole" in page
        and thinning["embedded"] < thinning["runs"] == 40
    )
    kept = embedded(page)["report"]["runs"]
    assert len(kept) == thinning["embedded"] and {r["block"] % every for r in kept} == {0}
    assert "t: wall: 20 runs" in page  # the plots still draw every run
    assert "every run (violins)" in page and "median and range in each of" in page


def test_report_writes_any_format_to_a_file_with_o_and_compare_exports_html(tmp_path: Path) -> None:
    ran = tmp_path / "ran.html"
    cli("compare", "--cmd", "true", "-V", "a", "-V", "b", "-n", "2", "--name", "x", "--export-html", str(ran), check=True)
    assert len(svgs(ran.read_text())) == 1
    page, table = tmp_path / "x.html", tmp_path / "x.md"
    proc = cli("report", "x", "--format", "html", "-o", str(page), check=True)
    assert proc.stdout == "" and "wrote the html report" in proc.stderr
    assert page.read_text().startswith("<!DOCTYPE html>") and len(svgs(page.read_text())) == 1
    cli("report", "x", "--format", "md", "--output", str(table), check=True)
    assert table.read_text().startswith("## x")
    assert cli("report", "x", "--format", "html").stdout.startswith("<!DOCTYPE html>")


def test_the_app_cycle_and_times_views_are_drawn_as_tables_when_present(tmp_path: Path) -> None:
    report = report_of(tmp_path)
    cycle = renamed(report, {"wall": "launch_hot"})  # workload t as the app cycle, its wall as the hot launch time
    cycle.experiment.spec["workloads"][0]["builtin"] = "memory.app_cycle"
    page = render(cycle, "html")
    tables = page[page.index('<section id="tables">') :]
    assert "<h3>t: app cycle, b vs a (medians)</h3>" in tables and ">Launch time<" in tables
    assert "<h3>fake: times, best of N and median</h3>" in tables
    assert "app cycle" not in render(report, "html")


def test_a_page_of_failed_runs_only_shows_them_and_no_plot(tmp_path: Path) -> None:
    report = report_of(tmp_path, variants=[{"name": "a", "env": {"FAKE_FAIL": "1"}}], blocks=2)
    page = render(report, "html")
    assert svgs(page) == [] and "One variant only" in page
    problems = page[page.index('<section id="problems">') :]
    assert problems.count('<td class="name">t</td>') == 2 and "<pre>boom</pre>" in problems


@pytest.mark.parametrize(
    ("parameters", "legend"),
    [
        ([{"field": "env.FAKE_WALL", "values": [1.0, 1.5]}], ["fitted line"]),  # 3 would bend on the log scale: no line
        ([{"field": "env.FAKE_WALL", "values": [1.0, 1.2]}, {"field": "env.B", "values": ["x", "y"]}],
         ["env.B = x", "env.B = y"]),
    ],
    ids=["one-parameter", "two-parameters"],
)  # fmt: skip
def test_a_sweep_gets_a_curve_per_metric_with_its_line_or_a_curve_per_second_value(
    tmp_path: Path, parameters: list[dict[str, Any]], legend: list[str]
) -> None:
    sweep = {"fit": "value", "parameters": parameters}
    report = report_of(tmp_path, variants=[{"name": "none"}], sweep=sweep, workloads=[{"name": "t", "command": ["true"]}])
    (curve,) = [s for s in svgs(render(report, "html")) if 'aria-label="t: wall along env.FAKE_WALL"' in s]
    assert [t for t in ("fitted line", "env.B = x", "env.B = y") if f">{t}</text>" in curve] == legend


def test_a_percentile_no_run_has_is_a_gap_without_a_warning(tmp_path: Path) -> None:
    report = report_of(tmp_path)
    for run in report.runs:
        if run["workload"] == "t":
            worst = {"x/fifo:worst": 9.0} if run["variant"] == "a" else {}  # b's fifo half never ran
            run["metrics"].update({"x/fifo:p50": 1.0, "x/fifo:p99": 3.0, **worst})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        page = render(report, "html")
    assert "t: x/fifo percentiles" in page


def with_histograms(report: Report, keep: Any) -> Report:
    """Workload t's runs with latency histograms in their details (`keep(run)`: its `of`, or None
    for a run stored without) and percentile metrics, as an IPC workload's runs carry them."""
    for run in report.runs:
        if run["workload"] == "t":
            run["metrics"].update({"x/other:p50": 1000.0, "x/other:p99": 3000.0})
            of = keep(run)
            run["details"] = {
                **(run["details"] or {}),
                **({"histograms": {"per_octave": 8, "unit": "ns", "of": of}} if of else {}),
            }
    return report


def test_ipc_histograms_are_added_up_per_variant_and_drawn(tmp_path: Path) -> None:
    # a: 2 samples in bucket 80 (1,000 ns) and 1 in 81 each run; b: 3 in bucket 88 (2,000 ns)
    def keep(run: dict[str, Any]) -> dict[str, Any]:
        return {"x/other": {"first": 80, "counts": [2, 1]} if run["variant"] == "a" else {"first": 88, "counts": [3]}}

    report = with_histograms(report_of(tmp_path), keep)
    runs = data.by_workload(report)["t"]
    summed = runs.histograms["x/other"]
    assert runs.without_histograms == 0 and list(summed.runs) == [10, 10]
    assert (summed.counts[0, 80], summed.counts[0, 81], summed.counts[1, 88]) == (20, 10, 30)
    assert summed.counts.sum() == 60 and "u" in data.by_workload(report) and not data.by_workload(report)["u"].histograms
    page = render(report, "html")
    (svg,) = [s for s in svgs(page) if 'aria-label="t: x/other latency histogram"' in s]
    assert ">latency (us)</text>" in svg and ">share of samples (%)</text>" in svg and ">a</text>" in svg
    assert "60 transactions of 20 runs" in page
    assert "percentiles" not in page  # every run has its histogram: no percentile profile beside it


def test_runs_without_histograms_keep_the_percentile_profile(tmp_path: Path) -> None:
    report = with_histograms(
        report_of(tmp_path), lambda run: {"x/other": {"first": 80, "counts": [1]}} if run["block"] < 4 else None
    )
    page = render(report, "html")
    assert "t: x/other latency histogram" in page and "t: x/other percentiles" in page
    assert "12 runs stored without histograms are left out" in page
    older = render(with_histograms(report_of(tmp_path / "old"), lambda run: None), "html")
    assert "latency histogram" not in older and "t: x/other percentiles" in older


@pytest.mark.parametrize(
    "bad",
    [{"first": -1, "counts": [1]}, {"first": 510, "counts": [1, 2, 3]}, {"first": 80, "counts": ["x"]},
     {"first": 80, "counts": [-4]}, {"first": 80, "counts": [2**70]}, {"first": 80}, "not a histogram", None,
     "another grid"],
)  # fmt: skip
def test_a_histogram_no_probe_writes_is_left_out_not_fatal(tmp_path: Path, bad: Any) -> None:
    def keep(run: dict[str, Any]) -> dict[str, Any]:
        return {"x/other": bad if run["block"] == 0 else {"first": 80, "counts": [1]}, HOSTILE: {"first": 90, "counts": [1]}}

    report = with_histograms(report_of(tmp_path), keep)
    if bad == "another grid":  # a probe counting 16 buckets to a doubling: its runs are not added to these
        for run in report.runs:
            if run["workload"] == "t" and run["block"] == 0:
                run["details"]["histograms"] = {"per_octave": 16, "unit": "ns", "of": {"x/other": {"first": 1, "counts": [1]}}}  # type: ignore[index]
    runs = data.by_workload(report)["t"]
    assert runs.without_histograms == 2 and runs.histograms["x/other"].counts.sum() == 18
    page = render(report, "html")
    assert "t: x/other latency histogram" in page and "<b title" not in page.split('id="benchlab-data"')[0]
