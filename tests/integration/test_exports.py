"""`--export-FORMAT FILE` through the real CLI and probe: several exports in one run, each the
report its format prints; Google Benchmark JSON that benchlab's own reader takes back; a
hyperfine document shaped as hyperfine's own; refusals before anything runs."""

from __future__ import annotations

import csv
import io
import json
import statistics
import subprocess
from pathlib import Path
from typing import Any

import pytest

from benchlab.workloads.gbench_json import benchmark_results, parse_document
from tests.conftest import cli, need
from tests.hostile.conftest import refused

CHURN = "alloc.churn threads=1 ops=20000"
EXPORTS = {"json": "r.json", "markdown": "r.md", "csv": "r.csv", "hyperfine": "h.json", "gbench": "g.json"}


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One compare of a built-in workload and a command under two variants, every export at once."""
    folder = tmp_path_factory.mktemp("exported")
    flags = [arg for name, file in EXPORTS.items() for arg in (f"--export-{name}", str(folder / file))]
    db = str(folder / "r.db")
    proc = cli("compare", "-w", CHURN, "--cmd", "true", "-V", "base", "-V", "two: env.X=1", "-n", "3", "--name", "ex",
               "--db", db, "-f", "md", *flags, check=True)  # fmt: skip
    (folder / "stdout.md").write_text(proc.stdout)
    return folder


def runs_of(folder: Path, workload: str, variant: str) -> list[dict[str, Any]]:
    runs = json.loads((folder / "r.json").read_text())["runs"]
    return [r for r in runs if (r["workload"], r["variant"], r["status"], r["warmup"]) == (workload, variant, "ok", False)]


def test_every_export_of_one_run_is_the_report_its_format_prints(exported: Path) -> None:
    db = str(exported / "r.db")
    assert (exported / "r.md").read_text() == (exported / "stdout.md").read_text()
    for name, file in EXPORTS.items():
        fmt = {"markdown": "md"}.get(name, name)
        printed = cli("report", "ex", "--db", db, "-f", fmt, check=True).stdout
        assert (exported / file).read_text() == printed, name
    lines = list(csv.DictReader(io.StringIO((exported / "r.csv").read_text())))
    assert {line["workload"] for line in lines} == {CHURN.split()[0], "cmd"}
    again = exported / "again.json"
    cli("report", "ex", "--db", db, "--times", "--export-hyperfine", str(again), check=True)  # a view only for the table
    assert again.read_text() == (exported / "h.json").read_text()


def test_google_benchmark_json_reads_back_through_benchlabs_own_reader(exported: Path) -> None:
    text = (exported / "g.json").read_bytes()
    metrics, failed = benchmark_results(parse_document(text))
    read = {m.name: m for m in metrics}
    assert not failed
    for variant in ("base", "two"):
        runs = runs_of(exported, "alloc.churn", variant)
        assert len(runs) == 3
        # repetitions reduce to their median, aggregates are not samples: the median run's value comes back
        for field in ("real_time", "cpu_time", "items_per_second"):
            metric = read[f"alloc.churn/variant:{variant}:{field}"]
            assert metric.value == pytest.approx(statistics.median(r["metrics"][field] for r in runs))
        assert read[f"alloc.churn/variant:{variant}:real_time"].unit == "ns"
        command = read[f"cmd/variant:{variant}:real_time"]
        assert command.unit == "ns"
        walls = [r["metrics"]["wall"] for r in runs_of(exported, "cmd", variant)]
        assert command.value == pytest.approx(statistics.median(walls) * 1e9)
    doc = json.loads(text)
    # what Google's tools/compare.py reads of every entry; `filters` mode strips the variant to pair benchmarks
    for entry in doc["benchmarks"]:
        assert {"name", "run_name", "run_type", "real_time", "cpu_time", "time_unit", "repetitions", "threads"} <= set(entry)
        assert entry["run_type"] == "iteration" or entry["aggregate_name"] in ("mean", "median", "stddev")
    names = [e["name"] for e in doc["benchmarks"]]
    base = [n.replace("variant:base", "V") for n in names if "variant:base" in n]
    assert base == [n.replace("variant:two", "V") for n in names if "variant:two" in n]


def test_the_hyperfine_document_has_the_keys_and_types_hyperfine_writes(exported: Path, tmp_path: Path) -> None:
    need("hyperfine")
    theirs = tmp_path / "hyperfine.json"
    subprocess.run(["hyperfine", "-N", "--runs", "3", "--export-json", str(theirs), "true"], check=True, capture_output=True)

    def shape(value: object) -> object:
        if isinstance(value, list):
            return ["list", *sorted({str(shape(v)) for v in value})]
        if isinstance(value, dict):
            return {k: shape(v) for k, v in value.items()}
        return "number" if isinstance(value, int | float) and not isinstance(value, bool) else type(value).__name__

    (real,) = json.loads(theirs.read_text())["results"]
    ours = json.loads((exported / "h.json").read_text())
    assert set(ours) == {"results"} and len(ours["results"]) == 4  # two workloads x two variants
    for result in ours["results"]:
        assert {k: shape(result[k]) for k in real} == shape(real)
        # keys hyperfine writes only in some runs: memory (1.19 and later), parameters (a parameter scan)
        assert set(result) - set(real) <= {"memory_usage_byte", "parameters"}
    assert [r["command"] for r in ours["results"]] == ["base: alloc.churn", "two: alloc.churn", "base: cmd", "two: cmd"]


def test_an_export_that_cannot_be_written_is_refused_before_anything_runs(tmp_path: Path) -> None:
    nowhere = str(tmp_path / "no-such-folder" / "h.json")
    refused("compare", "--cmd", "true", "-n", "2", "--export-hyperfine", nowhere, mentions="--export-hyperfine")
    twice = str(tmp_path / "x.json")
    refused("compare", "--cmd", "true", "-n", "2", "--export-json", twice, "--export-gbench", twice, mentions="two exports")
    refused("compare", "--cmd", "true", "-n", "2", "-f", "gbench", "--export-json", str(tmp_path), mentions="--export-json")
