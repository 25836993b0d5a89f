"""`benchlab diff A B`: results measured separately, compared as two samples under the verdict rules
of an experiment, from the database or from bundles, with what that costs said in the report."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from benchlab.analysis.diff import diff
from benchlab.analysis.sides import resolve
from benchlab.analysis.simulation import simulate_diff
from benchlab.errors import SpecError
from benchlab.metrics import Metric
from benchlab.report import render
from benchlab.report_model import Report, json_schema
from benchlab.store import NewRun, Store
from tests.conftest import cli, experiment_rows

DAY = 86400.0


def stored(
    store: Store,
    name: str,
    values: dict[str, list[float]],
    *,
    at: float = 1.7e9,
    host: str = "lab",
    version: str = "v1",
    user: bool = False,
    hosts: tuple[str, ...] = (),
) -> None:
    """An experiment of one command workload `w` whose variant v's wall times are values[v], block by block
    (on `host`, or block b on hosts[b % len(hosts)], as a fleet's workers share blocks)."""
    blocks = max(len(v) for v in values.values())
    spec = {
        "name": name, "blocks": blocks, "workloads": [{"name": "w", "command": ["true"]}],
        "variants": [{"name": v} for v in values],
    }  # fmt: skip
    exp = store.create_experiment(**experiment_rows(spec, version), created_at=at)
    host_ids = [store.host_id({"hostname": h, "cpu_model": "cpu", "kernel": "6.1"}) for h in hosts or (host,)]
    for variant, walls in values.items():
        for block, wall in enumerate(walls):
            host_id = host_ids[block % len(host_ids)]
            metrics = [Metric("wall", wall, "s", "lower")]
            if user:
                metrics.append(Metric("user", wall / 2, "s", "lower"))
            store.record_run(exp, NewRun(host_id=host_id, workload="w", variant=variant, block=block, warmup=False, position=block, status="ok", started_at=at + block, ended_at=at + block + wall, metrics=metrics))  # fmt: skip


def diffed(store: Store, a: str, b: str) -> Report:
    return diff(resolve(a, lambda: store), resolve(b, lambda: store))


def wall(report: Report, workload: str = "w") -> dict[str, object]:
    return next(r.model_dump() for r in report.rows if r.metric == "wall" and r.workload == workload)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(str(tmp_path / "results.db"))  # the database the CLI of these tests uses (BENCHLAB_DB)


def noisy(rng: np.random.Generator, n: int, centre: float = 1.0, noise: float = 0.003) -> list[float]:
    return list(centre * np.exp(rng.normal(0, noise, n)))


def test_identical_distributions_are_the_same_never_better_or_worse(store: Store) -> None:
    values = noisy(np.random.default_rng(1), 12)
    stored(store, "monday", {"base": values})
    stored(store, "tuesday", {"base": list(reversed(values))}, at=1.7e9 + DAY)
    row = wall(diffed(store, "monday", "tuesday"))
    assert row["verdict"] == "same" and row["change"] == 0.0
    assert row["test"] == "mann-whitney" and row["pairs"] == 0


def test_a_clear_shift_is_decided(store: Store) -> None:
    rng = np.random.default_rng(2)
    stored(store, "before", {"base": noisy(rng, 8, noise=0.03)})
    stored(store, "after", {"base": noisy(rng, 10, centre=1.5, noise=0.03)}, at=1.7e9 + DAY)
    row = wall(diffed(store, "before", "after"))
    assert row["verdict"] == "worse" and abs(row["change"] - 0.5) < 0.05  # type: ignore[operator]
    assert (row["n"], row["baseline_n"]) == (10, 8)
    assert wall(diffed(store, "after", "before"))["verdict"] == "better"


def test_runs_are_never_paired_even_where_the_blocks_line_up(store: Store) -> None:
    """B is 2% slower than A in every block, under a drift from block to block three times larger than
    that: paired by block it would be decided; as the two samples it is, it is not."""
    drift = list(np.random.default_rng(3).uniform(1.0, 1.3, 12))
    stored(store, "a", {"base": drift})
    stored(store, "b", {"base": [1.02 * x for x in drift]}, at=1.7e9 + DAY)
    row = wall(diffed(store, "a", "b"))
    assert row["pairs"] == 0 and row["test"] == "mann-whitney"
    assert row["verdict"] == "unclear"


def test_the_report_says_what_an_unpaired_comparison_costs_naming_both_hosts_and_dates(store: Store) -> None:
    rng = np.random.default_rng(4)
    stored(store, "old", {"base": noisy(rng, 6)}, host="lab-1")
    stored(store, "new", {"base": noisy(rng, 6)}, at=1.7e9 + 2 * DAY, host="lab-2")
    report = diffed(store, "old", "new")
    assert report.baseline == "old" and report.variants == ["old", "new"]
    a, b = report.experiment.sides
    assert (a.experiment, b.experiment, a.runs, b.runs) == ("old", "new", 6, 6)
    text = "\n".join(report.warnings)
    assert text.startswith("unpaired: old and new were measured separately")
    assert "needs more runs" in text and "drift between the two sessions" in text
    assert "A = old: experiment old (base)" in text and "lab-1" in text and "2023-11-14" in text
    assert "B = new: experiment new (base)" in text and "lab-2" in text and "2023-11-16" in text
    assert "ran on different machines" in text
    for fmt in ("table", "md", "benchstat"):
        assert "unpaired" in render(report, fmt)


def test_name_variant_picks_one_variant_and_several_are_matched_by_name(store: Store) -> None:
    rng = np.random.default_rng(5)
    stored(store, "one", {"fast": noisy(rng, 8), "slow": noisy(rng, 8, centre=2.0), "only1": noisy(rng, 8)}, user=True)
    stored(store, "two", {"fast": noisy(rng, 8), "slow": noisy(rng, 8, centre=2.0), "only2": noisy(rng, 8)}, user=True)
    single = diffed(store, "one:fast", "two:slow")
    assert single.variants == ["one:fast", "two:slow"] and {r.workload for r in single.rows} == {"w"}
    assert wall(single)["verdict"] == "worse" and wall(single)["pairs"] == 0
    # two variants of one experiment shared blocks: judged paired, as `report one --baseline fast` judges slow
    within = diffed(store, "one:fast", "one:slow")
    assert within.variants == ["fast", "slow"] and {r.variant for r in within.rows} == {"slow"}
    assert wall(within)["verdict"] == "worse" and wall(within)["pairs"] == 8
    assert "one:fast and one:slow are variants of one experiment" in within.warnings[0]
    # an experiment whose blocks ran on two hosts (a fleet's): each host's B against A on the reference host
    stored(store, "fleet", {"fast": noisy(rng, 8), "slow": noisy(rng, 8, centre=2.0)}, hosts=("h1", "h2"))
    fleet = diffed(store, "fleet:fast", "fleet:slow")
    assert fleet.variants[0].startswith("fast@") and {v.split("@")[0] for v in fleet.variants[1:]} == {"slow"}
    assert len(fleet.variants) == 3 and {r.variant for r in fleet.rows} == set(fleet.variants[1:])
    assert all(r.change is not None and r.change > 0.5 for r in fleet.rows) and "fast@" in render(fleet, "table")
    matched = diffed(store, "one", "two")
    assert [(r.workload, r.metric) for r in matched.rows] == [
        ("w/fast", "wall"), ("w/fast", "user"), ("w/slow", "wall"), ("w/slow", "user"),
    ]  # fmt: skip
    assert wall(matched, "w/slow")["baseline_median"] == pytest.approx(2.0, rel=0.02)
    assert "variants only in one: only1 (not compared)" in matched.warnings
    assert "variants only in two: only2 (not compared)" in matched.warnings
    with pytest.raises(SpecError, match=r"'one' has variants fast, slow, only1 and 'two:fast' one: name the variant"):
        diffed(store, "one", "two:fast")


def test_other_versions_of_a_workload_are_never_compared(store: Store) -> None:
    stored(store, "v1", {"base": [1.0, 1.1, 1.2]})
    stored(store, "v2", {"base": [1.0, 1.1, 1.2]}, version="v2")
    with pytest.raises(SpecError, match=r"nothing to compare.*workload w is version v1 in v1 and v2 in v2"):
        diffed(store, "v1", "v2")


def test_unpaired_a_a_false_verdicts_stay_within_alpha() -> None:
    """400 A/A diffs from lognormal noise through the diff's judging: at most alpha (5%) show any
    better/worse row (bench/diff_calibration.py prints the rates for more sizes and noises)."""
    rng = np.random.default_rng(18)
    false = sum(any(r.verdict in ("better", "worse") for r in simulate_diff(rng, runs=(6, 10), noise=0.05)) for _ in range(400))
    assert false <= 0.05 * 400
    assert sum(simulate_diff(rng, runs=(6, 10), noise=0.05, shift=0.3)[0].verdict == "worse" for _ in range(20)) >= 19


def compare(name: str, seconds: str) -> None:
    """A tiny real experiment: `sh -c 'sleep $D'` (one workload version whatever D is) under two variants."""
    cli("compare", "--cmd", 'sh -c "sleep $D"', "-V", f"x: env.D={seconds}", "-V", "y: env.D=0", "-n", "6",
        "--name", name, "-f", "md", check=True)  # fmt: skip


def test_experiments_and_bundles_through_the_cli(tmp_path: Path) -> None:
    compare("monday", "0.01")
    compare("tuesday", "0.05")
    proc = cli("diff", "monday:x", "tuesday:x", "-f", "json", check=True)
    document = json.loads(proc.stdout)
    jsonschema.validate(document, json_schema(), cls=jsonschema.Draft202012Validator)  # the published report schema
    assert [side["label"] for side in document["experiment"]["sides"]] == ["monday:x", "tuesday:x"]
    row = next(r for r in document["rows"] if r["metric"] == "wall")
    assert row["verdict"] == "worse" and row["test"] == "mann-whitney" and row["pairs"] == 0
    cli("export", "monday", "-o", str(tmp_path / "monday.json"), check=True)
    elsewhere = str(tmp_path / "elsewhere.db")  # a database that holds only tuesday's results
    cli("export", "tuesday", "-o", str(tmp_path / "tuesday.json"), check=True)
    cli("import", str(tmp_path / "tuesday.json"), "--db", elsewhere, check=True)
    proc = cli("diff", "monday.json", "tuesday", "--db", elsewhere, "-f", "benchstat", check=True, cwd=tmp_path)
    assert any(line.count("│") == 3 and "monday.json" in line and "tuesday" in line for line in proc.stdout.splitlines())
    assert "cmd/x" in proc.stdout and "cmd/y" in proc.stdout and "vs base" in proc.stdout
    assert "from bundle monday.json" in proc.stdout
    listed = cli("list", "--db", elsewhere, check=True).stdout
    assert "tuesday" in listed and "monday" not in listed  # read, never imported
    both = cli("diff", f"{tmp_path}/monday.json:x", f"{tmp_path}/tuesday.json:x", "--db", str(tmp_path / "none.db"), check=True)
    assert "worse" in both.stdout and not (tmp_path / "none.db").exists()
    footer = " ".join(both.stdout.split())  # the footer as one line, however the table folded it
    assert "unpaired (a diff): two-sample Hodges-Lehmann and Mann-Whitney" in footer and "paired t-test" not in footer


def test_a_file_and_an_experiment_of_one_name_read_the_experiment_and_say_so(tmp_path: Path, store: Store) -> None:
    stored(store, "same", {"base": [1.0, 1.1, 1.2]})
    stored(store, "other", {"base": [1.0, 1.1, 1.2]})
    (tmp_path / "same").write_text("{}")
    proc = cli("diff", "same", "other", "-f", "md", check=True, cwd=tmp_path)
    assert "'same' is an experiment and a file; the experiment was read (write ./same for the file)" in proc.stdout
    proc = cli("diff", "./same", "other", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.strip() == "benchlab: same is not a benchlab bundle (schema 'None')"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["one", "one"], "A and B are both 'one'"),
        (["one", "nope"], "'nope' is neither an experiment in"),
        (["one:zz", "two"], "'one:zz': experiment 'one' has no variant 'zz' (it has base)"),
        (["one", "./missing.json"], "no bundle at missing.json"),
        (["one", "two", "-f", "nope"], "unknown report format 'nope'"),
        (["one", "two", "-f", "html"], "it holds judged rows, not the runs html lists"),
        (["one", "two", "-f", "hyperfine"], "--format: a diff is drawn as table, md, json, csv, benchstat"),
        (["one", ""], "an empty argument names no experiment and no bundle"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(store: Store, args: list[str], said: str) -> None:
    stored(store, "one", {"base": [1.0, 1.1, 1.2]})
    stored(store, "two", {"base": [1.0, 1.1, 1.2]})
    proc = cli("diff", *args)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and said in proc.stderr and "Traceback" not in proc.stderr


def test_hostile_names_and_host_facts_from_a_bundle_are_escaped(tmp_path: Path, store: Store) -> None:
    rng = np.random.default_rng(6)
    stored(store, "mine", {"base": noisy(rng, 6)})
    stored(store, "theirs", {"base": noisy(rng, 6)})
    cli("export", "theirs", "-o", str(tmp_path / "b.json"), check=True)
    bundle = json.loads((tmp_path / "b.json").read_text())
    for facts in bundle["hosts"].values():
        facts["hostname"] = "[red]evil[/red] <b>|*"
    hostile = tmp_path / "x\x1b]0;owned\x07|*[b].json"
    hostile.write_text(json.dumps(bundle))
    for fmt in ("table", "md", "benchstat", "csv"):
        proc = cli("diff", "mine", str(hostile), "-f", fmt, check=True)
        assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout
        shown = "\\x1b]0;owned\\x07"  # Markdown backslashes a backslash
        assert (shown.replace("\\", "\\\\") if fmt == "md" else shown) in proc.stdout
    md = cli("diff", "mine", str(hostile), "-f", "md", check=True).stdout
    assert "[red]evil[/red] \\<b\\>\\|\\*" in md  # cannot end a cell or open HTML or emphasis
    table = cli("diff", "mine", str(hostile), check=True).stdout
    assert "[red]evil[/red] <b>|*" in table  # rich markup printed as typed, never applied
    assert os.path.exists(hostile)
