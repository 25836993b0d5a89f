"""The store's host identity, read-only opening and experiment dropping."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from benchlab.errors import StoreError
from benchlab.measure.host import fingerprint, machine_state
from benchlab.store import Store
from tests.conftest import experiment_rows

HOST = {
    "hostname": "lab-1", "machine_id": "abc", "arch": "x86_64", "cpu_model": "EPYC", "cpus_online": 8,
    "kernel": "6.1.0", "kernel_cmdline": "quiet", "memory_kib": 16 << 20, "virtualization": "none",
    "smt": True, "governor": "performance", "boost": "off", "swap_kib": 0, "thp": "madvise",
    "allocators": ["jemalloc"], "python": "3.11.2",
}  # fmt: skip


@pytest.mark.parametrize(
    "change",
    [
        {"swap_kib": 8 << 20},  # a zram study turned swap on
        {"governor": "powersave"},
        {"boost": "on"},
        {"smt": False},
        {"thp": "always"},
        {"allocators": ["jemalloc", "tcmalloc"]},
        {"python": "3.12.0"},
    ],
)
def test_machine_state_is_not_the_host_identity(tmp_path: Path, change: dict[str, object]) -> None:
    store = Store(str(tmp_path / "h.db"))
    assert store.host_id(HOST) == store.host_id({**HOST, **change})


@pytest.mark.parametrize(
    "change", [{"cpu_model": "Xeon"}, {"cpus_online": 4}, {"memory_kib": 8 << 20}, {"kernel": "6.2.0"}, {"hostname": "lab-2"}]
)
def test_what_stays_put_is_the_host_identity(tmp_path: Path, change: dict[str, object]) -> None:
    store = Store(str(tmp_path / "h.db"))
    assert store.host_id(HOST) != store.host_id({**HOST, **change})


def test_a_host_row_hashed_with_its_volatile_state_is_found_and_rehashed(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    store = Store(str(db))
    old_identity = {k: v for k, v in HOST.items() if k not in ("allocators", "python")}  # how rows were hashed before
    old_hash = hashlib.sha256(json.dumps(old_identity, sort_keys=True).encode()).hexdigest()
    with sqlite3.connect(db) as conn:
        conn.execute(
            "insert into host (hash, fingerprint, created_at) values (?, ?, 0)", (old_hash, json.dumps(HOST, sort_keys=True))
        )
        (old_id,) = conn.execute("select id from host").fetchone()
    assert store.host_id({**HOST, "swap_kib": 4 << 20}) == old_id
    assert store.host_id(HOST) == old_id
    with sqlite3.connect(db) as conn:
        assert conn.execute("select count(*) from host").fetchone()[0] == 1


def test_the_local_fingerprint_holds_the_machine_state() -> None:
    state = machine_state()
    swap = {"swap_kib", "zram_disksize", "zram_algorithm"}
    assert set(state) == {"smt", "governor", "boost", *swap, "hugetlb_pages", "lru_gen", "thp"}
    assert set(state) <= set(fingerprint())


def test_the_machine_state_reads_the_kernels_figures_as_written() -> None:
    """Read with bare system calls and /proc/meminfo once for its two figures: the same values a
    plain read of each file gives (a file that is not there reads as None)."""
    state = machine_state()
    memory = {line.split(":")[0]: int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()}
    assert (state["swap_kib"], state["hugetlb_pages"]) == (memory["SwapTotal"], memory.get("HugePages_Total"))
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    assert state["thp"] == (thp.read_text().split("[")[1].split("]")[0] if thp.exists() else None)
    lru = Path("/sys/kernel/mm/lru_gen/enabled")
    assert state["lru_gen"] == (lru.read_text().strip() if lru.exists() else None)


def test_a_read_only_store_never_creates_a_database(tmp_path: Path) -> None:
    missing = tmp_path / "sub" / "none.db"
    with pytest.raises(StoreError, match="no results database at"):
        Store(str(missing), create=False)
    assert not missing.exists() and not missing.parent.exists()
    Store(str(missing))
    assert Store(str(missing), create=False).list_experiments() == []


def test_a_dropped_experiment_frees_its_name(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "d.db"))
    make = experiment_rows(
        {"name": "gone", "workloads": [{"name": "w", "command": ["true"]}], "variants": [{"name": "a"}]}, "command:1"
    )
    exp = store.create_experiment(**make)
    store.drop_experiment(exp)
    assert store.find_experiment("gone") is None
    assert store.create_experiment(**make).name == "gone"


def test_memory_that_moved_a_few_pages_is_the_same_host_and_its_stored_row(tmp_path: Path) -> None:
    """A fresh qemu guest's MemTotal moved by 4 KiB between boots (a CI run stored block 0 twice
    before this); a reboot moves a machine's by a few pages: one row, whose hash guests name."""
    store = Store(str(tmp_path / "h.db"))
    first = store.host_row(HOST)
    rebooted = {**HOST, "memory_kib": HOST["memory_kib"] - 12}
    assert store.host_row(rebooted) == first  # the stored row's hash, not the rebooted fingerprint's digest
    assert store.host_row({**HOST, "memory_kib": HOST["memory_kib"] + 4}) == first
    assert store.host_id({**HOST, "memory_kib": HOST["memory_kib"] + (32 << 10)}) != first[0]  # 32 MiB more: other RAM
    assert store.host_id({**rebooted, "kernel": "6.2.0"}) != first[0]  # only memory has a tolerance
    with sqlite3.connect(tmp_path / "h.db") as conn:
        assert conn.execute("select count(*) from host").fetchone()[0] == 3
