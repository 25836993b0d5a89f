"""Corrupted and hostile bundles: each one refused in one line naming its place, the database unchanged.

The bundle is a real export of a tiny experiment (made once per module with the real CLI); each
case mutates a copy. The database each case imports into already holds another experiment, so
"unchanged" means more than "not created".
"""

from __future__ import annotations

import base64
import copy
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import time
import uuid
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import BENCHLAB, cli
from tests.hostile.conftest import refused

Bundle = dict[str, Any]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Bundle, Path]]:
    """(the exported bundle of `tiny`, a database holding only the experiment `other`)."""
    root = tmp_path_factory.mktemp("bundles")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BENCHLAB_STATE_DIR", str(root / "state"))
        mp.setenv("BENCHLAB_DB", str(root / "source.db"))
        cli("compare", "--cmd", "true", "--variant", "a", "--variant", "b", "-n", "2", "--name", "tiny", check=True)
        cli("export", "tiny", "-o", str(root / "tiny.json"), check=True)
        mp.setenv("BENCHLAB_DB", str(root / "base.db"))
        cli("compare", "--cmd", "true", "-n", "2", "--name", "other", check=True)
    yield json.loads((root / "tiny.json").read_text()), root / "base.db"


@pytest.fixture
def bundle(made: tuple[Bundle, Path]) -> Bundle:
    """A fresh copy of the bundle, with the base database in place as this test's database."""
    good, base = made
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{base}{suffix}").exists():
            shutil.copy(f"{base}{suffix}", os.environ["BENCHLAB_DB"] + suffix)
    return copy.deepcopy(good)


def write(tmp_path: Path, data: Bundle | str | bytes) -> str:
    path = tmp_path / "bundle.json"
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data if isinstance(data, str) else json.dumps(data))  # NaN and Infinity as Python writes them
    return str(path)


def run0(b: Bundle) -> dict[str, Any]:
    return b["runs"][0]


def metric0(b: Bundle) -> dict[str, Any]:
    return b["runs"][0]["metrics"][0]


def host(b: Bundle) -> dict[str, Any]:
    return next(iter(b["hosts"].values()))


def setting(get: Callable[[Bundle], dict[str, Any]], key: str, value: object) -> Callable[[Bundle], None]:
    def mutate(b: Bundle) -> None:
        get(b)[key] = value

    return mutate


def dropping(get: Callable[[Bundle], dict[str, Any]], key: str) -> Callable[[Bundle], None]:
    return lambda b: get(b).pop(key)


def experiment(b: Bundle) -> dict[str, Any]:
    return b["experiment"]


def spec(b: Bundle) -> dict[str, Any]:
    return b["experiment"]["spec"]


def top(b: Bundle) -> dict[str, Any]:
    return b


def duplicate_run(b: Bundle, **changes: object) -> None:
    b["runs"].append({**copy.deepcopy(run0(b)), **changes})


def metric_twice(b: Bundle) -> None:
    run0(b)["metrics"].append(dict(metric0(b)))


def unit_elsewhere(b: Bundle) -> None:
    b["runs"][1]["metrics"][0]["unit"] = "ms"


def rename_everywhere(b: Bundle, name: str) -> None:
    experiment(b)["name"] = name
    spec(b)["name"] = name


def extra_workload(b: Bundle) -> None:
    experiment(b)["workloads"].append({"name": "ghost", "kind": "command", "version": "command:1"})


def swapped_variants(b: Bundle) -> None:
    experiment(b)["variants"].reverse()


def changed_config(b: Bundle) -> None:
    experiment(b)["variants"][0]["config"]["env"] = {"EVIL": "1"}


def two_baselines(b: Bundle) -> None:
    for v in experiment(b)["variants"]:
        v["is_baseline"] = True


def bad_allocator(b: Bundle) -> None:
    experiment(b)["variants"][0]["config"]["allocator"] = "evil"


def other_host_fact(b: Bundle) -> None:
    host(b)["nested"] = {"deep": [1, 2]}


def many_facts(b: Bundle) -> None:
    host(b).update({f"fact_{i}": i for i in range(100)})


def huge_details(b: Bundle) -> None:
    run0(b)["details"] = {"blob": "x" * (100 * 1024)}


def host_key(b: Bundle) -> None:
    key, facts = next(iter(b["hosts"].items()))
    b["hosts"] = {"../../etc/passwd": facts}
    for run in b["runs"]:
        run["host"] = "../../etc/passwd"


# (case id, mutation, what the one line must mention)
def knob_outside(b: Bundle) -> None:
    spec(b)["variants"][0]["knobs"] = experiment(b)["variants"][0]["config"]["knobs"] = {"/etc/passwd": "x"}


def knob_spelt_twice(b: Bundle) -> None:
    knobs = {"/proc/sys/vm//swappiness": "10"}
    spec(b)["variants"][0]["knobs"] = experiment(b)["variants"][0]["config"]["knobs"] = knobs


CASES: list[tuple[str, Callable[[Bundle], None], str]] = [
    ("unknown-top-level-key", setting(top, "extra", 1), "extra"),
    ("no-runs", dropping(top, "runs"), "runs"),
    ("runs-null", setting(top, "runs", None), "runs"),
    ("runs-object", setting(top, "runs", {"0": {}}), "runs"),
    ("bundle-id-number", setting(top, "bundle_id", 12), "bundle_id"),
    ("bundle-id-path", setting(top, "bundle_id", "../../x"), "bundle_id"),
    ("created-at-text", setting(top, "created_at", "yesterday"), "created_at"),
    ("hosts-list", setting(top, "hosts", [{"hostname": "x"}]), "hosts"),
    ("host-null", lambda b: b["hosts"].update({"1": None}), "hosts.1"),
    ("host-key-path", host_key, "hosts"),
    ("host-cpus-text", setting(host, "cpus_online", "8"), "cpus_online"),
    ("host-cpus-zero", setting(host, "cpus_online", 0), "cpus_online"),
    ("host-memory-negative", setting(host, "memory_kib", -1), "memory_kib"),
    ("host-hostname-1mb", setting(host, "hostname", "h" * (1 << 20)), "hostname"),
    ("host-hostname-escape", setting(host, "hostname", "\x1b]0;owned\x07"), "hostname"),
    ("host-fact-nested", other_host_fact, "nested"),
    ("host-facts-many", many_facts, "hosts.1"),
    ("host-allocators-path", setting(host, "allocators", ["../lib"]), "allocators"),
    ("run-no-uuid", dropping(run0, "uuid"), "runs[0].uuid"),
    ("run-uuid-not-uuid", setting(run0, "uuid", "'; drop table run; --"), "runs[0].uuid"),
    ("run-uuid-number", setting(run0, "uuid", 7), "runs[0].uuid"),
    ("run-uuid-twice", lambda b: duplicate_run(b, block=1, position=9), "runs[4].uuid"),
    ("run-key-twice", lambda b: duplicate_run(b, uuid=str(uuid.uuid4())), "a second run"),
    ("run-host-unknown", setting(run0, "host", "99"), "runs[0].host"),
    ("run-workload-unknown", setting(run0, "workload", "ghost"), "runs[0].workload"),
    ("run-variant-unknown", setting(run0, "variant", "ghost"), "runs[0].variant"),
    ("run-workload-path", setting(run0, "workload", "../../etc/passwd"), "runs[0].workload"),
    ("run-variant-markup", setting(run0, "variant", "[bold red]x[/]"), "runs[0].variant"),
    ("run-block-1e300", setting(run0, "block", 1e300), "runs[0].block"),
    ("run-block-negative", setting(run0, "block", -1), "runs[0].block"),
    ("run-block-huge", setting(run0, "block", 10**12), "runs[0].block"),
    ("run-block-bool", setting(run0, "block", True), "runs[0].block"),
    ("run-block-text", setting(run0, "block", "3"), "runs[0].block"),
    ("run-warmup-text", setting(run0, "warmup", "no"), "runs[0].warmup"),
    ("run-position-fraction", setting(run0, "position", 1.5), "runs[0].position"),
    ("run-status-unknown", setting(run0, "status", "great"), "runs[0].status"),
    ("run-status-null", setting(run0, "status", None), "runs[0].status"),
    ("run-ends-before-start", lambda b: run0(b).update(ended_at=run0(b)["started_at"] - 10), "ended"),
    ("run-started-negative", setting(run0, "started_at", -5.0), "runs[0].started_at"),
    ("run-ended-1e300", setting(run0, "ended_at", 1e300), "runs[0].ended_at"),
    ("run-started-text", setting(run0, "started_at", "now"), "runs[0].started_at"),
    ("run-exit-code-text", setting(run0, "exit_code", "0"), "runs[0].exit_code"),
    ("run-exit-code-huge", setting(run0, "exit_code", 2**40), "runs[0].exit_code"),
    ("run-message-200kb", setting(run0, "message", "m" * 200_000), "runs[0].message"),
    ("run-message-nul", setting(run0, "message", "a\x00b"), "runs[0].message"),
    ("run-stderr-list", setting(run0, "stderr_tail", ["a"]), "runs[0].stderr_tail"),
    ("run-version-other", setting(run0, "workload_version", "command:0000"), "runs[0].workload_version"),
    ("run-version-null", setting(run0, "workload_version", None), "runs[0].workload_version"),
    ("run-details-text", setting(run0, "details", "glibc"), "runs[0].details"),
    ("run-details-huge", huge_details, "details"),
    ("run-unknown-key", setting(run0, "note", "x"), "runs[0].note"),
    ("metrics-object", setting(run0, "metrics", {"wall": 1}), "runs[0].metrics"),
    ("metric-value-text", setting(metric0, "value", "1.0"), "runs[0].metrics[0].value"),
    ("metric-value-null", setting(metric0, "value", None), "runs[0].metrics[0].value"),
    ("metric-value-1e308", setting(metric0, "value", 1e308), "runs[0].metrics[0].value"),
    ("metric-time-negative", setting(metric0, "value", -0.5), "negative"),
    ("metric-direction-unknown", setting(metric0, "direction", "sideways"), "runs[0].metrics[0].direction"),
    ("metric-unit-long", setting(metric0, "unit", "u" * 1000), "runs[0].metrics[0].unit"),
    ("metric-unit-escape", setting(metric0, "unit", "\x1b[31m"), "runs[0].metrics[0].unit"),
    ("metric-name-newline", setting(metric0, "name", "wall\nforged line"), "runs[0].metrics[0].name"),
    ("metric-name-empty", setting(metric0, "name", ""), "runs[0].metrics[0].name"),
    ("metric-name-1mb", setting(metric0, "name", "n" * (1 << 20)), "runs[0].metrics[0].name"),
    ("metric-twice-in-a-run", metric_twice, "appears twice"),
    ("metric-unit-disagrees", unit_elsewhere, "runs[1].metrics[0]"),
    ("experiment-name-path", lambda b: rename_everywhere(b, "../../etc/passwd"), "experiment.name"),
    ("experiment-name-1mb", lambda b: rename_everywhere(b, "x" * (1 << 20)), "experiment.name"),
    ("experiment-name-markup", lambda b: rename_everywhere(b, "[link=file:///etc]x[/link]"), "experiment.name"),
    ("experiment-name-not-spec", setting(experiment, "name", "another"), "experiment.name"),
    ("experiment-created-negative", setting(experiment, "created_at", -1), "experiment.created_at"),
    ("experiment-no-workloads", setting(experiment, "workloads", []), "experiment.workloads"),
    ("experiment-extra-workload", extra_workload, "experiment.workloads"),
    ("experiment-workload-kind", lambda b: experiment(b)["workloads"][0].update(kind="gbench"), "experiment.workloads"),
    ("experiment-workload-version-empty", lambda b: experiment(b)["workloads"][0].update(version=""), "version"),
    ("experiment-variants-swapped", swapped_variants, "experiment.variants"),
    ("experiment-variant-config-changed", changed_config, "experiment.variants[0]"),
    ("experiment-two-baselines", two_baselines, "experiment.variants"),
    ("experiment-variant-config-invalid", bad_allocator, "experiment.variants[0].config.allocator"),
    ("spec-blocks-one", setting(spec, "blocks", 1), "experiment.spec.blocks"),
    ("spec-unknown-key", setting(spec, "evil", True), "experiment.spec.evil"),
    ("spec-no-workloads", dropping(spec, "workloads"), "experiment.spec.workloads"),
    ("spec-null", setting(experiment, "spec", None), "experiment.spec"),
    ("spec-version-newer", setting(spec, "version", 2), "experiment.spec.version: version 2 was written by a newer benchlab"),
    ("spec-version-text", setting(spec, "version", "1"), "experiment.spec.version: version '1' is not a spec version"),
    # the second batch: what reports read is typed, and a run must belong to the spec it came with
    (
        "details-failed-benchmarks-a-list",
        lambda b: run0(b).update(details={"failed_benchmarks": ["BM_x"]}),
        "runs[0].details.failed_benchmarks",
    ),
    (
        "details-failed-benchmarks-text",
        lambda b: run0(b).update(details={"failed_benchmarks": "BM_x"}),
        "runs[0].details.failed_benchmarks",
    ),
    (
        "details-failed-benchmark-escape",
        lambda b: run0(b).update(details={"failed_benchmarks": {"BM\x1b[2J": "x"}}),
        "failed_benchmarks",
    ),
    ("details-machine-nested", lambda b: run0(b).update(details={"machine": {"swap_kib": {"x": 1}}}), "runs[0].details.machine"),
    ("details-allocator-a-number", lambda b: run0(b).update(details={"allocator": 3}), "runs[0].details.allocator"),
    ("uuid-upper-case", lambda b: run0(b).update(uuid=run0(b)["uuid"].upper()), "runs[0].uuid"),
    ("warm-up-run-without-warm-up", setting(run0, "warmup", True), "runs[0].block"),
    ("block-beyond-the-spec", setting(run0, "block", 99_999), "runs[0].block"),
    ("ended-in-the-future", lambda b: run0(b).update(started_at=9.9e10, ended_at=9.9e10), "runs[0].ended_at"),
    ("knob-outside-proc-in-the-spec", knob_outside, "experiment.spec.variants[0].knobs"),
    ("knob-spelt-twice-in-the-spec", knob_spelt_twice, "experiment.spec.variants[0].knobs"),
    ("ok-run-that-crashed", setting(run0, "exit_code", 139), "an ok run exited 139"),
    ("failed-run-with-metrics", setting(run0, "status", "failed"), "a failed run has no metrics"),
]


@pytest.mark.parametrize(("mutate", "mentions"), [pytest.param(m, w, id=i) for i, m, w in CASES])
def test_a_corrupted_bundle_is_refused_and_nothing_changes(
    bundle: Bundle, tmp_path: Path, mutate: Callable[[Bundle], None], mentions: str
) -> None:
    mutate(bundle)
    refused("import", write(tmp_path, bundle), mentions=mentions)


RAW_CASES: list[tuple[str, Callable[[Bundle], bytes | str], str]] = [
    ("not-json", lambda b: "{ nope", "not a benchlab bundle"),
    ("json-list", lambda b: "[]", "not a benchlab bundle"),
    ("other-schema", lambda b: json.dumps({**b, "schema": "benchlab.bundle/99"}), "not a benchlab bundle"),
    ("not-utf8", lambda b: b"\xff\xfe" + json.dumps(b).encode(), "UTF-8"),
    ("nan-value", lambda b: json.dumps(b).replace('"value": ', '"value": NaN, "x": ', 1), "NaN"),
    ("infinity-time", lambda b: json.dumps(b).replace('"started_at": ', '"started_at": Infinity, "y": ', 1), "Infinity"),
    ("minus-infinity-timeout", lambda b: json.dumps(b).replace('"timeout": 600.0', '"timeout": -Infinity'), "Infinity"),
    ("nested-deeply", lambda b: '{"schema": "benchlab.bundle/1", "x": ' + "[" * 200_000 + "]" * 200_000 + "}", "nested"),
    ("integer-5000-digits", lambda b: json.dumps(b).replace('"block": 0', '"block": ' + "9" * 5000, 1), "not a benchlab"),
    ("a-float-beyond-a-double", lambda b: json.dumps(b).replace('"value": ', '"value": 1e400, "x": ', 1), "beyond the numbers"),
    ("empty", lambda b: "", "is empty"),
    ("a-key-twice", lambda b: json.dumps(b).replace('"bundle_id": ', '"bundle_id": "x", "bundle_id": ', 1), "appears twice"),
]


@pytest.mark.parametrize(("text", "mentions"), [pytest.param(t, w, id=i) for i, t, w in RAW_CASES])
def test_a_file_that_is_no_bundle_is_refused(
    bundle: Bundle, tmp_path: Path, text: Callable[[Bundle], bytes | str], mentions: str
) -> None:
    refused("import", write(tmp_path, text(bundle)), mentions=mentions)


def test_paths_that_are_no_bundle_file_are_refused(bundle: Bundle, tmp_path: Path) -> None:
    refused("import", str(tmp_path / "missing.json"), mentions="no bundle at")
    refused("import", str(tmp_path), mentions="cannot read")
    sparse = tmp_path / "huge.json"
    with sparse.open("wb") as f:  # a sparse file over the cap: refused by its size, never read
        f.truncate((1 << 30) + 1)
    refused("import", str(sparse), mentions="1 GiB")


def test_a_named_pipe_nobody_writes_is_read_as_empty_not_waited_on(bundle: Bundle, tmp_path: Path) -> None:
    fifo = tmp_path / "bundle.fifo"
    os.mkfifo(fifo)
    refused("import", str(fifo), mentions="is empty", timeout=30)


def test_values_in_another_unit_than_the_stored_ones_are_refused(bundle: Bundle, tmp_path: Path) -> None:
    """Another host's runs of the same experiment merge, but not a metric in another unit: the
    database keeps one unit per metric, and `ms` read as `s` would be a 1000x change."""
    cli("import", write(tmp_path, bundle), check=True)
    other = copy.deepcopy(bundle)
    other["bundle_id"] = str(uuid.uuid4())
    host(other)["hostname"] = "another-host"
    for run in other["runs"]:
        run["uuid"] = str(uuid.uuid4())
        for metric in run["metrics"]:
            if metric["name"] == "wall":
                metric.update(unit="ms", value=metric["value"] * 1000)
    refused("import", write(tmp_path, other), code=4, mentions="different units")
    for run in other["runs"]:  # the same runs in the stored unit merge as another host's column
        for metric in run["metrics"]:
            if metric["name"] == "wall":
                metric.update(unit="s", value=metric["value"] / 1000)
    cli("import", write(tmp_path, other), check=True)


def test_a_refused_bundle_creates_no_database(made: tuple[Bundle, Path], tmp_path: Path) -> None:
    bad = copy.deepcopy(made[0])
    bad["runs"][0]["block"] = -1
    assert not Path(os.environ["BENCHLAB_DB"]).exists()
    refused("import", write(tmp_path, bad), mentions="block")
    assert not Path(os.environ["BENCHLAB_DB"]).exists()


def test_the_bundle_imports_once_and_reads_back(bundle: Bundle, tmp_path: Path) -> None:
    path = write(tmp_path, bundle)
    cli("import", path, check=True)
    data = json.loads(cli("report", "tiny", "--format", "json", check=True).stdout)
    assert len(data["runs"]) == len(bundle["runs"]) == 4
    assert "other" in cli("list", check=True).stdout  # what was there stays
    refused("import", path, code=4, mentions="already imported")
    again = {**bundle, "bundle_id": str(uuid.uuid4())}
    refused("import", write(tmp_path, again), code=4, mentions="already stored")


def test_a_bundle_of_another_spec_under_a_stored_name_is_refused(bundle: Bundle, tmp_path: Path) -> None:
    cli("import", write(tmp_path, bundle), check=True)
    other = copy.deepcopy(bundle)
    other["bundle_id"] = str(uuid.uuid4())
    other["experiment"]["spec"]["seed"] = 7
    refused("import", write(tmp_path, other), code=4, mentions="different spec")


def big_bundle(good: Bundle, runs: int) -> Bundle:
    """`runs` runs of the tiny experiment: the same measurements over many blocks."""
    out = {**copy.deepcopy(good), "bundle_id": str(uuid.uuid4())}
    template = [run for run in good["runs"] if run["block"] == 0]  # one run of each variant
    out["runs"] = [
        {**copy.deepcopy(template[i % len(template)]), "uuid": str(uuid.uuid4()), "block": i // len(template), "position": i}
        for i in range(runs)
    ]
    out["experiment"]["spec"]["blocks"] = max(2, -(-runs // len(template)))  # a spec those blocks belong to
    return out


def stored(db: str, name: str) -> tuple[int, int]:
    """(experiments named `name`, runs of it) in the database."""
    with sqlite3.connect(db) as conn:
        experiments = conn.execute("select count(*) from experiment where name = ?", (name,)).fetchone()[0]
        runs = conn.execute(
            "select count(*) from run join experiment on experiment.id = run.experiment_id where experiment.name = ?", (name,)
        ).fetchone()[0]
    return experiments, runs


@pytest.mark.slow
def test_an_import_killed_at_any_moment_leaves_all_or_nothing(bundle: Bundle, tmp_path: Path) -> None:
    runs = 20_000
    path = write(tmp_path, big_bundle(bundle, runs))
    db = os.environ["BENCHLAB_DB"]
    started = time.monotonic()
    cli("import", path, "--db", str(tmp_path / "timing.db"), check=True)
    took = time.monotonic() - started
    rng = random.Random(14)
    outcomes = set()
    for _ in range(6):
        proc = subprocess.Popen([BENCHLAB, "import", path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.2, 1.0) * took)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        outcome = stored(db, "tiny")
        assert outcome in ((0, 0), (1, runs)), f"a killed import left {outcome}"
        outcomes.add(outcome)
        if outcome == (1, runs):
            break
    assert stored(db, "other")[1] == 2  # what was there before is intact
    if (1, runs) not in outcomes:
        cli("import", path, check=True)
    assert stored(db, "tiny") == (1, runs)


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs, unmounted afterwards."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    where = tmp_path / "tiny"
    where.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(where)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


def test_a_full_disk_is_one_line_and_loses_nothing_committed(
    made: tuple[Bundle, Path], tiny_disk: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good, base = made
    db = tiny_disk / "results.db"
    monkeypatch.setenv("BENCHLAB_DB", str(db))
    cli("import", write(tmp_path, good), check=True)  # small: fits
    big = big_bundle(good, 20_000)
    big["experiment"]["name"] = big["experiment"]["spec"]["name"] = "big"
    refused("import", write(tmp_path, big), code=4, mentions="full")
    assert stored(str(db), "tiny") == (1, 4) and stored(str(db), "big") == (0, 0)
    assert json.loads(cli("report", "tiny", "--format", "json", check=True).stdout)["runs"]


def profiled(b: Bundle, profile: bytes | None = None, **changes: object) -> dict[str, Any]:
    """A profiled run of the bundle's first run's workload and variant, its stacks `profile`
    (default: a small good one), added to the bundle."""
    from benchlab.stacks import StackDocument, encode

    good = encode(StackDocument(event="cpu-clock", frames=[("main", "/usr/bin/true", False)], stacks=[("true", [0], 10**6, 1)]))
    first = run0(b)
    entry = {
        "uuid": str(uuid.uuid4()), "workload": first["workload"], "variant": first["variant"], "host": first["host"],
        "block": 0, "position": 99, "status": "ok", "started_at": first["started_at"], "ended_at": first["ended_at"],
        "wall_s": 0.01, "message": None, "profile": base64.b64encode(good if profile is None else profile).decode(),
    }  # fmt: skip
    entry.update(changes)
    b.setdefault("profiled_runs", []).append(entry)
    return entry


PROFILED_CASES: list[tuple[str, Callable[[Bundle], object], str]] = [
    ("profile-not-base64", lambda b: profiled(b).update(profile="%%%"), "profiled_runs[0]"),
    ("profile-not-compressed", lambda b: profiled(b, b"plain bytes"), "not a compressed profile"),
    (
        "profile-of-no-frame",
        lambda b: profiled(b, zlib.compress(b'{"event": "x", "frames": [], "stacks": [["p", [3], 1, 1]]}')),
        "names a frame",
    ),
    ("ok-profiled-run-without-profile", lambda b: profiled(b, profile=None).update(profile=None), "only an ok one"),
    ("profiled-run-of-no-variant", lambda b: profiled(b, variant="nope"), "profiled_runs[0].variant"),
    ("profiled-run-of-no-host", lambda b: profiled(b, host="nope"), "profiled_runs[0].host"),
    ("profiled-run-twice", lambda b: (profiled(b), profiled(b)), "second profiled run"),
    ("profiled-block-beyond-the-spec", lambda b: profiled(b, block=99), "profiled_runs[0].block"),
]


@pytest.mark.parametrize(("mutate", "mentions"), [pytest.param(m, w, id=i) for i, m, w in PROFILED_CASES])
def test_a_bundle_with_a_damaged_profiled_run_is_refused_and_nothing_changes(
    bundle: Bundle, tmp_path: Path, mutate: Callable[[Bundle], object], mentions: str
) -> None:
    mutate(bundle)
    refused("import", write(tmp_path, bundle), mentions=mentions)


def test_profiled_runs_travel_in_a_bundle_and_read_back_alike(bundle: Bundle, tmp_path: Path) -> None:
    entry = profiled(bundle)
    cli("import", write(tmp_path, bundle), check=True)
    explained = json.loads(cli("explain", "tiny", "--format", "json", check=True).stdout)
    assert explained["runs"] == 1 and explained["flames"][0]["frames"][-1]["name"] == "main"
    exported = tmp_path / "again.json"
    cli("export", "tiny", "-o", str(exported), check=True)
    (again,) = json.loads(exported.read_text())["profiled_runs"]
    assert again == {**entry, "host": again["host"]}  # the same run, its host renumbered by the database
