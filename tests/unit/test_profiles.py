"""Profiles without perf: stacks folded into each function's time, stored profiles refused when
damaged, profiled runs in the plan, and the per-function judgement on simulated profiles with
known changes (and none: the A/A false-attribution rate)."""

from __future__ import annotations

import importlib.util
import re
import struct
import types
import zlib
from pathlib import Path

import numpy as np
import pytest

from benchlab import stacks
from benchlab.analysis.profile_exports import speedscope_document
from benchlab.analysis.profiles import flame_graph, judge_profiles, read_profiles
from benchlab.analysis.simulation import simulate_profiles
from benchlab.errors import SpecError, WorkloadFailed
from benchlab.measure.perf_stacks import event_name
from benchlab.measure.process import Launch
from benchlab.measure.sampler import FOLD_SCRIPT, Counted, Sampler
from benchlab.plan import make_plan
from benchlab.report.formats.html import flames
from benchlab.report.views import profile_grid
from benchlab.spec.models import ProfileSpec
from benchlab.spec.validate import spec_from_dict
from benchlab.stacks import DamagedProfile, Function, StackDocument, costs, decode, encode, folded
from benchlab.stats.judge import Settings
from benchlab.store import ProfiledRun

APP = "/usr/bin/app"
MS = 1_000_000  # a cpu-clock period of one millisecond, in nanoseconds


def small_document() -> StackDocument:
    return StackDocument(
        event="cpu-clock",
        frames=[
            ("main", APP, False),
            ("work", APP, False),
            (None, "/usr/lib/libz.so.1", False),
            ("schedule", "[kernel.kallsyms]", True),
        ],
        stacks=[("app", [0, 1], 2 * MS, 2), ("app", [0, 1, 2], 1 * MS, 1), ("app", [0, 3], 3 * MS, 3)],
    )


def test_a_profile_gives_each_function_its_self_and_inclusive_time_and_each_library_and_space_theirs() -> None:
    got = costs(small_document())
    main, work, schedule = Function("main", "app", False), Function("work", "app", False), Function("schedule", "kernel", True)
    libz = Function("[libz.so.1]", "libz.so.1", False)
    assert got.unit == "s" and got.samples == 6
    assert got.total == pytest.approx(0.006)
    assert got.self_time == pytest.approx({work: 0.002, libz: 0.001, schedule: 0.003})
    assert got.inclusive == pytest.approx({main: 0.006, work: 0.003, libz: 0.001, schedule: 0.003})
    assert got.libraries == pytest.approx({"app": 0.002, "libz.so.1": 0.001, "kernel": 0.003})
    assert got.kernel == pytest.approx(0.003) and got.unsymbolized == pytest.approx(0.001)


def test_the_folded_export_is_what_flame_graph_tools_read() -> None:
    assert folded([small_document()]) == ["app;main;schedule_[k] 3", "app;main;work 2", "app;main;work;[libz.so.1] 1"]


def test_a_stored_profile_reads_back_as_written() -> None:
    assert decode(encode(small_document())) == small_document()


@pytest.mark.parametrize(
    ("blob", "says"),
    [
        (b"not compressed", "not a compressed profile"),
        (zlib.compress(b"{}"), "event"),
        (zlib.compress(b'{"event": "cpu-clock", "frames": [], "stacks": [["app", [0], 1, 1]]}'), "names a frame"),
        (zlib.compress(b'{"event": "cpu-clock", "frames": [], "stacks": [["app", [], -1, 1]]}'), "greater than or equal"),
    ],
)
def test_a_damaged_profile_is_refused_saying_why(blob: bytes, says: str) -> None:
    with pytest.raises(DamagedProfile, match=says):
        decode(blob)


def test_a_profile_that_inflates_past_the_limit_is_refused_without_inflating_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stacks, "MAX_DOCUMENT", 1000)
    with pytest.raises(DamagedProfile, match="inflates past"):
        decode(zlib.compress(b" " * 100_000))


def test_profiled_runs_follow_each_blocks_timed_runs_in_their_order_and_move_none_of_them() -> None:
    plain = make_plan(["a", "b"], ["x", "y", "z"], blocks=4, warmup=1, seed=7)
    profiled = make_plan(["a", "b"], ["x", "y", "z"], blocks=4, warmup=1, seed=7, profiled={"b"})
    assert [p.key for p in profiled if not p.profiled] == [p.key for p in plain]
    assert [p.position for p in profiled] == list(range(len(profiled)))
    for block in range(4):
        timed = [p.variant for p in profiled if p.workload == "b" and p.block == block and not p.warmup and not p.profiled]
        after = [p.variant for p in profiled if p.workload == "b" and p.block == block and p.profiled]
        assert after == timed
    assert not any(p.profiled for p in profiled if p.workload == "a" or p.warmup)


def test_profile_is_true_false_or_a_table_and_a_workload_may_opt_out() -> None:
    spec = spec_from_dict({
        "name": "p", "profile": {"frequency": 499, "max_size": "64M"}, "variants": [{"name": "v"}],
        "workloads": [{"name": "a", "command": "true"}, {"name": "b", "command": "true", "profile": False}],
    })  # fmt: skip
    chosen = [spec.profiling(w) for w in spec.workloads]
    assert chosen[0] is not None and chosen[0].frequency == 499 and chosen[0].max_size == 64 << 20 and chosen[1] is None
    with pytest.raises(SpecError, match="frequency"):
        spec_from_dict(
            {
                "name": "p",
                "profile": {"frequency": 0},
                "variants": [{"name": "v"}],
                "workloads": [{"name": "a", "command": "true"}],
            }
        )


SECONDS = np.array([0.30, 0.20, 0.12, 0.10, 0.08, 0.05, 0.03, 0.02])  # each function's time per run


def judged(
    runs: list[ProfiledRun], variants: list[str]
) -> list[tuple[str, str, float | None, tuple[float | None, float | None]]]:
    profiles = judge_profiles(runs, ["w"], variants, Settings(baseline=variants[0]), {})
    return [(r.name, r.verdict, r.change, r.change_ci) for r in profiles.rows if r.level == "function"]


@pytest.mark.parametrize("blocks", [5, 8])  # 8: where a signed-rank test could not decide a family of functions
def test_a_function_made_slower_tops_the_table_worse_with_an_interval_above_zero(blocks: int) -> None:
    rng = np.random.default_rng(3)
    slower = SECONDS.copy()
    slower[3] *= 1.5  # f3: +0.05 s of a 0.9 s run
    rows = judged(simulate_profiles(rng, {"A": SECONDS, "B": slower}, blocks=blocks, noise=0.02), ["A", "B"])
    name, verdict, change, (lo, hi) = rows[0]
    assert (name, verdict) == ("f3", "worse")
    assert lo is not None and hi is not None and 0 < lo < change < hi
    assert change == pytest.approx(0.05 / SECONDS.sum(), rel=0.3)  # as a share of the whole run


@pytest.mark.parametrize("waits", [False, True])  # with off-CPU waits, a second family shares alpha
def test_identical_variants_name_a_function_in_at_most_alpha_of_experiments(waits: bool) -> None:
    """The false-attribution rate under A/A: 300 simulated experiments of 5 blocks, noise 5% per
    function and run. Binomial(300, 0.05) exceeds 24 with probability 0.03."""
    rng = np.random.default_rng(11)
    named = 0
    for _ in range(300):
        runs = simulate_profiles(rng, {"A": SECONDS, "B": SECONDS}, blocks=5, noise=0.05, waits=waits)
        rows = judge_profiles(runs, ["w"], ["A", "B"], Settings(baseline="A"), {}).rows
        named += any(r.verdict in ("better", "worse") for r in rows if r.level in ("function", "off-cpu"))
        assert not waits or any(r.level == "off-cpu" for r in rows)
    assert named <= 24


def test_a_flame_graph_spans_each_frame_by_its_inclusive_time_from_the_process_up() -> None:
    profiled, _ = read_profiles([ProfiledRun("w", "A", 1, 0, 0, "ok", 0.0, 1.0, profile=encode(small_document()))])
    graph = flame_graph("w", "A", profiled)
    frames = {(f.name, f.depth): (round(f.start, 6), round(f.width, 6)) for f in graph.frames}
    assert graph.total == pytest.approx(0.006) and graph.unit == "s"
    assert frames == {
        ("app", 0): (0, 1), ("main", 1): (0, 1), ("schedule", 2): (0, 0.5), ("work", 2): (0.5, 0.5),
        ("[libz.so.1]", 3): (0.5, round(1 / 6, 6)),
    }  # fmt: skip


def test_the_page_colours_a_frame_by_its_judged_change_and_never_by_an_unjudged_difference() -> None:
    rng = np.random.default_rng(5)
    changed = SECONDS.copy()
    changed[2] *= 1.6  # f2 slower
    changed[1] *= 0.5  # f1 faster
    profiles = judge_profiles(simulate_profiles(rng, {"A": SECONDS, "B": changed}, blocks=5, noise=0.02), ["w"], ["A", "B"],
                              Settings(baseline="A"), {})  # fmt: skip
    verdicts = {r.name: r.verdict for r in profiles.rows if r.level == "function"}
    assert verdicts["f2"] == "worse" and verdicts["f1"] == "better"
    page = "".join(flames.section(profiles, "A")).split(", the baseline (")[0]  # B's graph, not A's own
    fills = dict(re.findall(r"<title>(f\d) \(app\)[^<]*</title><rect [^>]*fill=\"(rgb\([^)]*\))\"", page))
    red, green, blue = (int(x) for x in fills["f2"][4:-1].split(","))
    assert red > green and red > blue
    red, green, blue = (int(x) for x in fills["f1"][4:-1].split(","))
    assert blue > red and blue > green
    undecided = [name for name, verdict in verdicts.items() if verdict not in ("better", "worse")]
    assert undecided and all(fills[name] == flames.GREY for name in undecided if name in fills)


def test_speedscope_gets_a_profile_per_variant_whose_samples_name_its_frames() -> None:
    runs = simulate_profiles(np.random.default_rng(1), {"A": SECONDS, "B": SECONDS}, blocks=2, noise=0.02)
    profiled, _ = read_profiles(runs)
    document = speedscope_document("x", {("w", v): [p for p in profiled if p.run.variant == v] for v in ("A", "B")})
    assert document["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = document["shared"]["frames"]
    for profile in document["profiles"]:
        assert profile["type"] == "sampled" and profile["unit"] == "seconds"
        assert len(profile["samples"]) == len(profile["weights"])
        assert all(0 <= i < len(frames) for sample in profile["samples"] for i in sample)
        assert profile["endValue"] == pytest.approx(sum(profile["weights"]))
        assert profile["endValue"] == pytest.approx(2 * SECONDS.sum(), rel=0.1)


def _counted_runs(
    rng: np.random.Generator, counts: dict[str, tuple[float, float]], *, blocks: int, host: int = 1
) -> list[ProfiledRun]:
    """Profiled runs of `w` whose perf stat counted, per variant, (instructions, cycles per
    instruction) each with 1% noise per run, and a drift shared by each block's runs."""
    runs = []
    for block in range(blocks):
        drift = rng.lognormal(0, 0.05)
        for variant, (instructions, cpi) in counts.items():
            done = instructions * drift * rng.lognormal(0, 0.01)
            counters = {
                "instructions": done,
                "cycles": done * cpi * rng.lognormal(0, 0.01),
                "page-faults": 1000.0,
                "task-clock": 0.5,
            }
            document = small_document().model_copy(update={"counters": counters})
            runs.append(ProfiledRun("w", variant, host, block, len(runs), "ok", 0.0, 1.0, wall_s=1.0, profile=encode(document)))
    return runs


def _counter_table(runs: list[ProfiledRun]) -> dict[str, tuple[str | None, float | None, tuple[float | None, float | None], int]]:
    profiles = judge_profiles(runs, ["w"], ["A", "B"], Settings(baseline="A"), {})
    return {c.counter: (c.meaning, c.change, c.change_ci, c.pairs) for c in profiles.counters if c.variant == "B"}


def test_counters_split_the_change_in_cycles_into_more_work_and_slower_work_each_with_its_interval() -> None:
    """B runs 10% more instructions at the same speed: more work, not slower work; the two log
    changes add up to that of cycles."""
    table = _counter_table(_counted_runs(np.random.default_rng(5), {"A": (1e9, 1.2), "B": (1.1e9, 1.2)}, blocks=6))
    assert list(table) == ["cycles", "instructions", "cycles per instruction", "page-faults", "task-clock"]
    meaning, change, (lo, hi), pairs = table["instructions"]
    assert meaning == "more work" and pairs == 6 and lo is not None and hi is not None and 0.05 < lo < 0.1 < hi < 0.15
    meaning, change, (lo, hi), _ = table["cycles per instruction"]
    assert meaning == "slower work" and change is not None and abs(change) < 0.03  # noise: 1.4% per pair
    cycles, work, speed = (table[c][1] for c in ("cycles", "instructions", "cycles per instruction"))
    assert np.log1p(cycles) == pytest.approx(np.log1p(work) + np.log1p(speed))  # type: ignore[arg-type]
    assert table["page-faults"][1:3] == (0.0, (0.0, 0.0))  # the same count in every run


def test_counters_of_two_experiments_compare_as_two_samples() -> None:
    """In a diff the sides share no block: B's runs are on hosts of their own."""
    rng = np.random.default_rng(6)
    runs = [r for r in _counted_runs(rng, {"A": (1e9, 1.0), "B": (1e9, 1.5)}, blocks=6) if r.variant == "A"]
    runs += [r for r in _counted_runs(rng, {"A": (1e9, 1.0), "B": (1e9, 1.5)}, blocks=6, host=2) if r.variant == "B"]
    meaning, change, (lo, hi), pairs = _counter_table(runs)["cycles per instruction"]
    assert pairs == 0 and lo is not None and hi is not None and 0.4 < lo < change < hi < 0.6


def test_perf_stats_counts_are_read_in_seconds_and_what_it_cannot_count_is_named(tmp_path: Path) -> None:
    data = tmp_path / "perf.data"
    (tmp_path / "counters.json").write_text(
        "# started on Mon Nov 30 03:55:08 2026\n\n"
        '{"counter-value" : "1844.218000", "unit" : "msec", "event" : "task-clock", "event-runtime" : 1844218, "pcnt-running" : 100.00}\n'
        '{"counter-value" : "75.000000", "unit" : "", "event" : "page-faults", "event-runtime" : 1844218, "pcnt-running" : 50.00}\n'
        '{"counter-value" : "<not supported>", "unit" : "", "event" : "cycles", "event-runtime" : 0, "pcnt-running" : 100.00}\n'
    )
    sampler = Sampler("perf", "cpu-clock", ProfileSpec(), ("task-clock", "page-faults", "cycles"))
    counted = sampler.counted(data)
    assert counted.values == {"task-clock": pytest.approx(1.844218), "page-faults": 75.0} and counted.uncounted == ["cycles"]
    assert counted.multiplexed == ["page-faults"]  # counted 50% of the run, and scaled
    (tmp_path / "counters.json").write_text('{"counter-value": 3}\n')
    with pytest.raises(WorkloadFailed, match="perf stat wrote a line benchlab cannot read"):
        sampler.counted(data)
    argv = sampler.record(Launch(argv=("prog", "x"), env={"LD_PRELOAD": "/lib/je.so"}, timeout=1), data, system=False).argv
    stat = argv.index("stat")
    assert argv[stat - 1 : stat + 4] == ("perf", "stat", "-j", "-o", str(tmp_path / "counters.json"))
    assert argv[-5:] == ("--", "env", "LD_PRELOAD=/lib/je.so", "prog", "x")  # perf stat counts the workload, preloaded
    assert Sampler("perf", "cpu-clock", ProfileSpec()).counted(data) == Counted()  # nothing asked, nothing read


def test_counters_are_perf_events_never_options() -> None:
    for bad in (["-o/etc/passwd"], ["cycles instructions"], [""], ["x"] * 17):
        with pytest.raises(SpecError):
            spec_from_dict(
                {
                    "name": "x",
                    "profile": {"counters": bad},
                    "workloads": [{"name": "w", "command": ["true"]}],
                    "variants": [{"name": "v"}],
                }
            )
    spec = spec_from_dict(
        {
            "name": "x",
            "profile": {"counters": ["cycles:u", "cpu/event=0x3c,umask=0x0/"]},
            "workloads": [{"name": "w", "command": ["true"]}],
            "variants": [{"name": "v"}],
        }
    )
    assert spec.profile is not None and spec.profile.counters == ["cycles:u", "cpu/event=0x3c,umask=0x0/"]


def _fold_script() -> types.ModuleType:
    """perf_stacks.py as perf's Python runs it: a fresh module, its handlers called in time order."""
    spec = importlib.util.spec_from_file_location("perf_stacks_under_test", FOLD_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _chain(*names: str) -> list[dict[str, object]]:
    """A callchain as perf hands it: the leaf first, kernel frames in the kernel's half."""
    kernel = {"schedule", "do_wait", "pipe_read"}
    return [
        {
            "ip": (1 << 63 if n in kernel else 0) + 16 * (i + 1),
            "sym": {"name": n},
            "dso": "[kernel.kallsyms]" if n in kernel else "/bin/app",
        }
        for i, n in enumerate(names)
    ]


def test_the_fold_script_gives_each_wait_off_the_cpu_to_the_stack_it_switched_out_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = _fold_script()
    monkeypatch.setenv("BENCHLAB_STACKS", str(tmp_path / "stacks.json"))
    script.process_event(
        {"ev_name": "cpu-clock/freq=999/", "comm": "app", "sample": {"period": MS}, "callchain": _chain("work", "main")}
    )

    def out(tid: int, seconds: float, *frames: str) -> None:
        fields = {
            "common_s": int(seconds),
            "common_ns": round(seconds % 1 * 1e9),
            "prev_pid": tid,
            "prev_comm": "app",
            "common_callchain": _chain(*frames),
        }
        script.trace_unhandled("sched__sched_switch", None, fields)

    def back_in(tid: int, seconds: float) -> None:
        script.context_switch(round(seconds * 1e9), 0, tid, tid, -1, -1, -1, False, False)

    out(7, 1.0, "schedule", "pipe_read", "main")
    script.context_switch(round(1.0e9) + 5, 0, 7, 7, -1, -1, -1, True, False)  # the switch out itself: nothing ends
    back_in(7, 1.25)
    out(7, 2.0, "schedule", "do_wait", "main")
    back_in(7, 2.5)
    out(7, 3.0, "schedule", "pipe_read", "main")
    back_in(7, 3.25)
    out(8, 4.0, "schedule", "pipe_read", "main")  # a thread that never came back: no wait to count
    script.trace_unhandled("sched__sched_switch", None, {"prev_pid": 0, "common_s": 5, "common_ns": 0})  # the idle task
    script.trace_unhandled("irq__irq_handler_entry", None, {"irq": 1})
    script.trace_end()
    document = stacks.read_document((tmp_path / "stacks.json").read_bytes())
    assert document.event == "cpu-clock"  # the sampler's own name for it, without the frequency it asked for
    waits = costs(document.waits())
    assert waits.unit == "s" and waits.total == pytest.approx(1.0)
    assert waits.inclusive[Function("pipe_read", "kernel", True)] == pytest.approx(0.5)
    assert waits.inclusive[Function("do_wait", "kernel", True)] == pytest.approx(0.5)
    assert sorted(count for *_, count in document.off_cpu) == [1, 2]


def _waiting_runs(rng: np.random.Generator, waits: dict[str, float], blocks: int) -> list[ProfiledRun]:
    """Profiled runs whose threads wait in pipe_read for `waits[variant]` seconds and in do_wait for 0.2 s."""
    runs = []
    frames = [
        ("main", APP, False),
        ("pipe_read", "[kernel.kallsyms]", True),
        ("do_wait", "[kernel.kallsyms]", True),
        ("schedule", "[kernel.kallsyms]", True),
    ]
    for block in range(blocks):
        for variant, seconds in waits.items():
            piped, waited = (int(1e9 * s * rng.lognormal(0, 0.02)) for s in (seconds, 0.2))
            document = small_document().model_copy(update={"frames": frames, "stacks": [("app", [0], MS, 1)],
                                                            "off_cpu": [("app", [0, 1, 3], piped, 3), ("app", [0, 2, 3], waited, 1)]})  # fmt: skip
            runs.append(ProfiledRun("w", variant, 1, block, len(runs), "ok", 0.0, 1.0, wall_s=1.0, profile=encode(document)))
    return runs


def test_a_longer_wait_is_judged_worse_where_it_waits_in_a_family_of_its_own() -> None:
    runs = _waiting_runs(np.random.default_rng(8), {"A": 0.2, "B": 0.3}, blocks=5)
    profiles = judge_profiles(runs, ["w"], ["A", "B"], Settings(baseline="A"), {})
    waits = {r.name: r for r in profiles.rows if r.level == "off-cpu"}
    assert set(waits) == {"pipe_read", "do_wait"}  # schedule is every wait's leaf, main on every stack: neither says where
    piped = waits["pipe_read"]
    assert piped.verdict == "worse" and piped.family == "primary" and 0 < piped.change_ci[0] < 0.25 < piped.change_ci[1]  # type: ignore[operator]
    assert piped.share == pytest.approx(1.0, abs=0.1) and waits["do_wait"].verdict != "worse"
    total = next(r for r in profiles.rows if r.level == "off-cpu total")
    assert total.verdict == "-" and total.baseline_self_median == pytest.approx(0.4, rel=0.05)
    shown = "\n".join(str(g.rows) for g in profile_grid.grids(profiles))
    assert (
        "(all waits)" in shown
        and [g.title for g in profile_grid.grids(profiles)][1] == "where it waited: w, B against the baseline (off the CPU)"
    )


def test_a_frame_without_a_symbol_is_named_by_its_library_and_its_address_in_the_file(tmp_path: Path) -> None:
    """perf gives where the sampled code's mapping starts; the fold adds the executable
    segment's address from the file's program headers: the address objdump shows."""
    library = tmp_path / "libfake.so"
    header = bytearray(64)
    header[:6] = b"\x7fELF\x02\x01"  # 64-bit, little-endian
    struct.pack_into("<QHH", header, 0x20, 64, 0, 0)  # program headers right after the header
    struct.pack_into("<HH", header, 0x36, 56, 2)
    segments = struct.pack("<IIQQQQQQ", 1, 4, 0, 0, 0, 0x1000, 0x1000, 0x1000)  # PT_LOAD, read only
    segments += struct.pack("<IIQQQQQQ", 1, 5, 0x1000, 0x401000, 0x401000, 0x800, 0x800, 0x1000)  # PT_LOAD, r-x
    library.write_bytes(bytes(header) + segments)
    script = _fold_script()
    base = 0x7F00_0000_0000
    leaf = {"ip": base + 0x194, "dso": str(library)}  # 0x194 into the executable mapping
    caller = {"ip": 0x7E00_0000_0010, "dso": "/usr/lib/libother.so"}  # a library never sampled at a leaf
    script.process_event({"ev_name": "cpu-clock", "comm": "app", "dso": str(library), "dso_map_start": base,
                          "sample": {"pid": 9, "period": MS}, "callchain": [leaf, caller]})  # fmt: skip
    assert [name for name, *_ in script.frames] == [None, "[libfake.so]+0x401194"]
    assert Function("[libfake.so]+0x401194", "libfake.so", False) == stacks.function_of(
        "[libfake.so]+0x401194", str(library), False
    )
    document = StackDocument(event="cpu-clock", frames=[(None, "/usr/lib/libother.so", False), ("[libfake.so]+0x401194", str(library), False)],
                             stacks=[("app", [0, 1], MS, 1)])  # fmt: skip
    assert costs(document).unsymbolized == pytest.approx(0.001)  # still code without a symbol


def test_a_stripped_librarys_cold_addresses_are_judged_together_and_its_hot_ones_alone() -> None:
    """One hot instruction, and 40 others each well under 1% of the run: the hot one is a row,
    the others one row for their library, their time summed."""
    frames = [("main", APP, False), ("[libz.so.1]+0x10", "/usr/lib/libz.so.1", False)]
    frames += [(f"[libz.so.1]+{0x100 + i:#x}", "/usr/lib/libz.so.1", False) for i in range(40)]
    document = StackDocument(
        event="cpu-clock", frames=frames,
        stacks=[("app", [0], 500 * MS, 500), ("app", [0, 1], 100 * MS, 100), *(("app", [0, 2 + i], MS, 1) for i in range(40))],
    )  # fmt: skip
    runs = [ProfiledRun("w", v, 1, b, 0, "ok", 0.0, 1.0, wall_s=1.0, profile=encode(document)) for b in range(3) for v in "AB"]
    rows = {r.name: r for r in judge_profiles(runs, ["w"], ["A", "B"], Settings(baseline="A"), {}).rows if r.level == "function"}
    assert set(rows) == {"main", "[libz.so.1]+0x10", "[libz.so.1]"}
    assert rows["[libz.so.1]"].self_median == pytest.approx(0.040) and rows["[libz.so.1]"].inclusive_median is None
    assert rows["[libz.so.1]+0x10"].self_median == pytest.approx(0.100)


def test_a_hybrid_cpus_pmus_each_count_their_share_and_the_shares_add_up(tmp_path: Path) -> None:
    """perf stat on a hybrid CPU names each PMU's event (`cpu_core/cycles/`): one event to benchlab,
    counted where either PMU counted it."""
    (tmp_path / "counters.json").write_text(
        '{"counter-value" : "3000.000000", "unit" : "", "event" : "cpu_core/cycles/", "pcnt-running" : 100.00}\n'
        '{"counter-value" : "1000.000000", "unit" : "", "event" : "cpu_atom/cycles/", "pcnt-running" : 100.00}\n'
        '{"counter-value" : "500.000000", "unit" : "", "event" : "cpu_core/instructions/", "pcnt-running" : 100.00}\n'
        '{"counter-value" : "<not counted>", "unit" : "", "event" : "cpu_atom/instructions/", "pcnt-running" : 0.00}\n'
        '{"counter-value" : "<not supported>", "unit" : "", "event" : "cpu_atom/branch-misses/", "pcnt-running" : 0.00}\n'
    )
    counted = Sampler("perf", "cycles", ProfileSpec(), ("cycles", "instructions", "branch-misses")).counted(
        tmp_path / "perf.data"
    )
    assert counted.values == {"cycles": 4000.0, "instructions": 500.0} and counted.uncounted == ["branch-misses"]
    assert [event_name(n) for n in ("cpu-clock/freq=999/", "cpu_core/cycles/", "cycles", "cycles:u")] == [
        "cpu-clock",
        "cycles",
        "cycles",
        "cycles:u",
    ]
