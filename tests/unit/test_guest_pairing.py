"""A guest's runs pair with the native runs of the machine that booted it; another machine's never do."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchlab.analysis.analyze import analyze
from benchlab.analysis.environments import machine_of
from benchlab.metrics import Metric
from benchlab.store import NewRun, Store, host_digest
from tests.conftest import experiment_rows

NATIVE = {"hostname": "lab", "machine_id": "m1", "kernel": "6.18"}
SPEC = {"name": "vm", "blocks": 6, "workloads": [{"name": "w", "command": ["true"]}],
        "variants": [{"name": "native"}, {"name": "guest", "environment": {"kind": "vm"}}]}  # fmt: skip


def judged(tmp_path: Path, guest: dict[str, object]) -> dict[str, dict[str, object]]:
    """Six blocks in which the guest is 1.5x the native time, with a drift the pairing cancels."""
    store = Store(str(tmp_path / "g.db"))
    exp = store.create_experiment(**experiment_rows(SPEC))
    hosts = {"native": store.host_id(NATIVE), "guest": store.host_id(guest)}
    drift = np.random.default_rng(1).uniform(1.0, 3.0, 6)
    for block in range(6):
        for position, (variant, factor) in enumerate((("native", 1.0), ("guest", 1.5))):
            store.record_run(exp, NewRun(host_id=hosts[variant], workload="w", variant=variant, block=block, warmup=False, position=2 * block + position, status="ok", started_at=1.0, ended_at=2.0, metrics=[Metric("wall", float(drift[block] * factor), "s", "lower")]))  # fmt: skip
    report = analyze(store.load(exp)).report()
    return {r.variant: r.model_dump() for r in report.rows if r.metric == "wall"}


def test_a_guest_of_this_machine_is_paired_block_by_block(tmp_path: Path) -> None:
    rows = judged(tmp_path, {"hostname": "virtme-ng", "kernel": "6.1.0", "guest_of": host_digest(NATIVE)})
    assert set(rows) == {"guest"}
    assert rows["guest"]["test"] == "wilcoxon" and rows["guest"]["pairs"] == 6
    assert abs(rows["guest"]["change"] - 0.5) < 1e-9 and rows["guest"]["verdict"] == "worse"


def test_a_guest_of_another_machine_is_a_machine_of_its_own(tmp_path: Path) -> None:
    rows = judged(tmp_path, {"hostname": "virtme-ng", "kernel": "6.1.0", "guest_of": host_digest({"hostname": "far"})})
    assert set(rows) == {"guest@virtme-ng"}
    assert rows["guest@virtme-ng"]["test"] == "mann-whitney"  # blocks of two machines did not share a moment


def test_guests_of_one_absent_machine_share_it() -> None:
    of = host_digest({"hostname": "far"})
    hosts = {1: {"hostname": "a", "guest_of": of}, 2: {"hostname": "b", "guest_of": of}, 3: NATIVE, 4: {"hostname": "x"}}
    assert machine_of(hosts) == {1: 1, 2: 1, 3: 3, 4: 4}
    assert machine_of({1: NATIVE, 2: {"hostname": "g", "guest_of": host_digest(NATIVE)}}) == {1: 1, 2: 1}
