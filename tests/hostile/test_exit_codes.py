"""Exit codes a script or CI job can rely on (see the docstring of `benchlab.cli`).

0 every run ok (or --allow-failures); 2 bad input; 3 the machine lacks something;
4 the database refused; 5 runs failed (the report printed first, then one line saying how many).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import cli, need
from tests.hostile.conftest import refused

# 'bad' fails every run, 'slow' times out, the rest succeed
SHAPES = {
    "ok": (["-V", "a", "-V", "b"], 0, 0, ""),
    "all-fail": (["-V", "bad: env.MODE=bad", "-V", "bad2: env.MODE=bad"], 5, 4, "4 of 4 runs of 'x' failed;"),
    "some-fail": (["-V", "a", "-V", "bad: env.MODE=bad"], 5, 2, "2 of 4 runs of 'x' failed;"),
    "timeout": (["-V", "a", "-V", "slow: env.MODE=slow"], 5, 2, "2 of 4 runs of 'x' failed (2 timed out)"),
    "mixed": (
        ["-V", "bad: env.MODE=bad", "-V", "slow: env.MODE=slow"],
        5,
        4,
        "4 of 4 runs of 'x' failed (2 failed, 2 timed out)",
    ),
}
COMMAND = 'sh -c \'if [ "$MODE" = bad ]; then exit 3; fi; if [ "$MODE" = slow ]; then sleep 30; fi\''


def compare(*args: str) -> subprocess.CompletedProcess[str]:
    return cli("compare", "--cmd", COMMAND, "-n", "2", "--timeout", "1", "--name", "x", "--format", "json", *args, timeout=120)


@pytest.mark.parametrize(("variants", "code", "failed", "says"), SHAPES.values(), ids=SHAPES.keys())
def test_failed_runs_exit_5_after_the_report(variants: list[str], code: int, failed: int, says: str) -> None:
    proc = compare(*variants)
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    report = json.loads(proc.stdout)  # the report comes first, whole
    assert len(report["failed_runs"]) == failed
    last = proc.stderr.strip().splitlines()[-1]
    if code:
        assert last.startswith("benchlab: ") and says in last, last
    else:
        assert not last.startswith("benchlab: "), last


@pytest.mark.parametrize("shape", ["all-fail", "some-fail", "timeout"])
def test_allow_failures_exits_0(shape: str) -> None:
    proc = compare(*SHAPES[shape][0], "--allow-failures")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["failed_runs"]


def test_a_resumed_experiment_counts_the_failures_it_stored_before(tmp_path: Path) -> None:
    spec = tmp_path / "x.toml"
    spec.write_text(
        'name = "x"\nblocks = 2\n[[workloads]]\nname = "w"\ncommand = ["sh", "-c", "exit $CODE"]\n'
        '[[variants]]\nname = "a"\nenv = { CODE = "0" }\n[[variants]]\nname = "b"\nenv = { CODE = "1" }\n'
    )
    assert cli("run", str(spec), "--allow-failures").returncode == 0
    again = cli("run", str(spec), "--resume")  # the failed runs run again and fail again: they still count
    assert again.returncode == 5 and "2 of 4 runs of 'x' failed" in again.stderr, again.stderr


@pytest.mark.parametrize(
    ("args", "mentions"),
    [
        (["compare", "--cmd", "true", "-V", "a", "-n", "-3"], "blocks"),
        (["compare", "--cmd", "true", "-V", "a: nosuchkey=1"], "nosuchkey"),
        (["compare", "--cmd", "true", "--format", "xml"], "format"),
        (["run", "/nonexistent/spec.toml"], "spec.toml"),
        (["compare", "--no-such-flag"], "no-such-flag"),
    ],
    ids=["negative-blocks", "unknown-variant-key", "unknown-format", "missing-spec", "unknown-flag"],
)
def test_bad_input_exits_2(args: list[str], mentions: str) -> None:
    refused(*args, code=2, mentions=mentions)


def test_a_missing_machine_feature_exits_3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHLAB_PROBE", "/nonexistent/benchlab-probe")
    refused("compare", "-w", "alloc.churn", "-V", "a", "-n", "2", code=3, mentions="BENCHLAB_PROBE")


def test_one_broken_google_benchmark_keeps_the_others(tmp_path: Path) -> None:
    """A `SkipWithError` benchmark fails only its own metrics: the binary's other benchmarks are
    compared, the failure is stored with each run and shown in every report, and the exit is 5."""
    need("g++")
    if not Path("/usr/include/benchmark/benchmark.h").exists():
        pytest.skip("libbenchmark-dev is not installed (the README's test command installs it)")
    source = tmp_path / "bm.cc"
    source.write_text("""
#include <benchmark/benchmark.h>
static void BM_good(benchmark::State& state) { for (auto _ : state) benchmark::DoNotOptimize(state.iterations()); }
BENCHMARK(BM_good);
static void BM_broken(benchmark::State& state) { for (auto _ : state) {} state.SkipWithError("no \\x1b[31mdevice"); }
BENCHMARK(BM_broken);
static void BM_also_good(benchmark::State& state) { for (auto _ : state) benchmark::DoNotOptimize(state.range(0)); }
BENCHMARK(BM_also_good)->Arg(8);
BENCHMARK_MAIN();
""")
    binary = tmp_path / "bm"
    subprocess.run(["g++", "-O2", str(source), "-o", str(binary), "-lbenchmark", "-lpthread"], check=True)
    spec = tmp_path / "gb.toml"
    spec.write_text(
        f'name = "gb"\nblocks = 3\n[[workloads]]\nname = "gbench"\ngbench = "{binary}"\n'
        'args = ["--benchmark_min_time=0.01"]\n[[variants]]\nname = "a"\n[[variants]]\nname = "b"\n'
    )
    proc = cli("run", str(spec), "--format", "json", timeout=300)
    assert proc.returncode == 5, proc.stderr
    assert "1 benchmark(s) failed inside runs (gbench: BM_broken in 6 of 6)" in proc.stderr.strip().splitlines()[-1]
    data = json.loads(proc.stdout)
    assert data["failed_runs"] == []
    metrics = {r["metric"] for r in data["rows"]}
    assert {"BM_good:real_time", "BM_also_good/8:real_time"} <= metrics
    assert not any(m.startswith("BM_broken") for m in metrics)
    (failed,) = data["failed_benchmarks"]
    assert failed == {"workload": "gbench", "benchmark": "BM_broken", "variants": {"a": 3, "b": 3}, "failed": 6,
                      "runs": 6, "message": "no \x1b[31mdevice"}  # fmt: skip
    assert all(r["details"]["failed_benchmarks"] == {"BM_broken": "no \x1b[31mdevice"} for r in data["runs"])
    for fmt in ("table", "md"):
        text = cli("report", "gb", "--format", fmt, check=True).stdout
        assert "benchmark BM_broken failed in 6 of 6 runs" in text and "no \\x1b[31mdevice" in text.replace("\\\\", "\\")
        assert "\x1b" not in text
    spec.write_text(spec.read_text().replace('"gb"', '"gb2"'))
    assert cli("run", str(spec), "--allow-failures").returncode == 0


@pytest.mark.parametrize("args", [[], ["ipc"], ["container"], ["db"]])
def test_a_command_given_nothing_prints_its_help_as_help_reads_and_exits_2(args: list[str]) -> None:
    proc = cli(*args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("Usage: benchlab") and "\\x0a" not in proc.stderr and "\nCommands:\n" in proc.stderr
