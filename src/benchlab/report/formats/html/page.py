"""The HTML report: one self-contained page (no script to run, no font, style sheet or image
fetched from anywhere; plots are inline SVG), readable at a laptop's width.

In order: what changed (the better and worse rows with their change and 95% interval, then how
many rows came out each way), the CPU suite's score bars, the sweep's curves, per workload its
latency histograms (IPC workloads; each run's latency percentiles where runs have none) and,
per outcome metric, every run per variant beside the runs in the order they ran, then where the
time went (flame graphs of the profiled runs, `flames`), the tables of the view (and the app-cycle
and `--times` views where the report has them), failed runs and warnings, and the embedded data
(see `data`).
"""

from __future__ import annotations

import datetime
import html

from benchlab.report import safe
from benchlab.report.choices import View
from benchlab.report.formats.html import data, figures, flames, plots, tables
from benchlab.report.formats.html.tables import esc
from benchlab.report.views import app_cycle_grid, cells
from benchlab.report.views.grids import report_grids, resolved
from benchlab.report_model import Report

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1b1b1b;margin:0 auto;padding:16px 24px 48px;
max-width:1240px}
h1{font-size:22px;margin:8px 0}h2{font-size:18px;margin:32px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:20px 0 6px}p{margin:6px 0}.meta,.note,.quiet,figcaption{color:#555}.note{font-size:12px}
nav a{margin-right:14px}.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:12.5px;margin:6px 0}th,td{padding:3px 8px;border-bottom:1px solid #e4e4e4;
text-align:right;white-space:nowrap}th{background:#f5f5f5;white-space:normal;vertical-align:bottom}
td.name,th.name,.verdict{text-align:left}tr.em td{font-weight:600}
.v-better{color:#17803d;font-weight:600}.v-worse{color:#c62828;font-weight:600}.v-same{color:#666}.v-unclear{color:#9a6700}
figure{margin:14px 0}figure.half{display:inline-block;width:49%;margin:10px 0.5% 10px 0;vertical-align:top}
figcaption{font-size:12px}svg.plot{max-width:100%;height:auto;display:block}
svg.plot *{stroke-linejoin:round;stroke-linecap:butt}pre{background:#f7f7f7;padding:6px;overflow-x:auto;font-size:12px}
ul.warnings li{color:#8a5a00}
"""


def _when(ts: float) -> str:
    return datetime.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


def _header(report: Report) -> str:
    e = report.experiment
    runs = len(report.runs)
    failed = len(report.failed_runs)
    hosts = ", ".join(f"{fp.get('hostname', '?')} ({fp.get('cpu_model', '?')}, {fp.get('cpus_online', '?')} CPUs)"
                      for fp in e.hosts.values())  # fmt: skip
    meta = (
        f"{len(report.variants)} variants against '{report.baseline}'; {runs:,} runs ({failed} failed); created "
        f"{_when(e.created_at)}; {report.correction} correction at alpha = {report.alpha}, same within "
        f"±{report.margin:.1%}; hosts: {hosts or 'n/a'}"
    )
    return f'<h1>{esc(e.name)}</h1><p class="meta">{esc(meta, limit=safe.LINE_MAX)}</p>'


def _summary(report: Report) -> list[str]:
    problems = []
    if report.failed_runs or report.failed_benchmarks or report.warnings:
        problems.append(
            f'<p class="quiet">{len(report.failed_runs)} failed runs, {len(report.failed_benchmarks)} failed benchmarks, '
            f'{len(report.warnings)} warnings: <a href="#problems">below</a>.</p>'
        )
    return ["<h3>What changed</h3>", tables.changed(report), "<h3>All comparisons</h3>", tables.counts(report), *problems]


def _workloads(report: Report, canvas: plots.Canvas) -> list[str]:
    out = []
    for workload, runs in data.by_workload(report).items():
        body = [*figures.histograms(report, canvas, runs), *figures.percentiles(report, canvas, runs),
                *figures.metrics(report, canvas, runs)]  # fmt: skip
        if body:
            out += [f"<h3>{esc(workload)}</h3>", *body]
    if out:
        out.insert(0, '<p class="note">Per workload, its outcome metrics (CPU time, memory, faults and switches are in '
                      "the tables below and in the embedded data). Left: every run per variant (a violin above "
                      f"{plots.STRIP_MAX} runs), the black bar the median with its 95% interval; right: the runs in the "
                      f"order they ran (above {plots.ORDER_MAX} runs of a variant, per bin of time the median and the "
                      "range), where drift and outliers show.</p>")  # fmt: skip
    return out


def _tables(report: Report, view: View) -> list[str]:
    """The view's grids; in `auto`, also the app-cycle and `--times` views it did not draw."""
    shown = resolved(report, view)
    views: list[View] = [shown]
    if view == "auto":
        views += [v for v in ("app-cycle", "times") if v != shown and (v != "app-cycle" or app_cycle_grid.workloads(report))]
    out = []
    for v in views:
        grids, footer = report_grids(report, v)
        out += [tables.grid(g) for g in grids]
        out.append(f'<p class="note">{esc(footer, limit=safe.LINE_MAX)}</p>')
    return out


def _problems(report: Report) -> list[str]:
    out = []
    if report.failed_runs:
        rows = [
            [r["workload"], r["variant"], str(r["block"]), r["status"], "" if r["exit_code"] is None else str(r["exit_code"]),
             r["message"] or ""]
            for r in report.failed_runs
        ]  # fmt: skip
        out += ["<h3>Failed runs</h3>", tables.table(["workload", "variant", "block", "status", "exit", "message"], rows, left=2)]
        tails = [r for r in report.failed_runs if r["stderr_tail"]]
        for r in tails[:20]:
            out.append(f"<p>{esc(r['workload'])} / {esc(r['variant'])} block {r['block']}, stderr:</p>"
                       f"<pre>{html_block(r['stderr_tail'] or '')}</pre>")  # fmt: skip
        if len(tails) > 20:
            out.append(f'<p class="note">{len(tails) - 20} more stderr tails: benchlab show or --format json</p>')
    if report.failed_benchmarks:
        rows = [[b.workload, b.benchmark, f"{b.failed} of {b.runs}", b.message] for b in report.failed_benchmarks]
        out += ["<h3>Failed benchmarks</h3>", tables.table(["workload", "benchmark", "failed runs", "message"], rows, left=2)]
    if report.warnings:
        items = "".join(f"<li>{esc(w, limit=safe.LINE_MAX)}</li>" for w in report.warnings)
        out += ["<h3>Warnings</h3>", f'<ul class="warnings">{items}</ul>']
    return out


def html_block(text: str) -> str:
    """A stderr tail as preformatted text: its lines kept, everything else escaped."""
    return html.escape(safe.block(text))


def render(report: Report, view: View = "auto") -> str:
    thinning = data.thinning_of(report.runs)
    canvas = plots.Canvas()
    with plots.style():
        parts = [
            ("summary", "Summary", _summary(report)),
            ("scores", "Scores", figures.scores(report, canvas)),
            ("sweep", "Sweep", figures.sweep(report, canvas)),
            ("workloads", "Runs", _workloads(report, canvas)),
            ("profiles", "Where the time went", flames.section(report.profiles, report.baseline)),
            ("tables", "Tables", _tables(report, view)),
            ("problems", "Failed runs and warnings", _problems(report)),
        ]
    shown = [(anchor, title, body) for anchor, title, body in parts if body]
    nav = "".join(f'<a href="#{anchor}">{title}</a>' for anchor, title, _ in shown)
    sections = "".join(f'<section id="{anchor}"><h2>{title}</h2>{"".join(body)}</section>' for anchor, title, body in shown)
    footer = f'<p class="note" id="data-note">{esc(thinning.note(), limit=safe.LINE_MAX)}; {esc(cells.family_note())}</p>'
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(report.experiment.name)}: benchlab report</title><style>{CSS}</style></head><body>"
        f"{_header(report)}<nav>{nav}</nav>{sections}{footer}"
        f'<script type="application/json" id="benchlab-data">{data.script(report, thinning)}</script>'
        "</body></html>\n"
    )
