"""The app cycle in guests of Debian's kernel, whose MGLRU this machine's kernel lacks: the
`memory` field turned into each guest's own settings (MGLRU off and on, zram of a share of the
guest's memory, swappiness), read back by the cycle from inside the guest, this machine's own
swap and knobs untouched."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from benchlab.variants import kernels
from tests.conftest import cli

pytestmark = pytest.mark.slow  # boots guests (of the `guests` group: the session's kernel)

CYCLE = '{ apps = 10, anon = "24m", code = "1m", framework = "4m", iterations = 2, dwell = 20 }'


def test_mglru_off_and_on_in_guests_of_one_experiment(tmp_path: Path, guest_kernel: kernels.GuestKernel) -> None:
    kernel = guest_kernel.source.split("_")[0]
    guest = f'environment = {{ kind = "vm", kernel = "{kernel}", accel = "tcg", memory = "384M", disk = "128M" }}'
    spec = tmp_path / "reclaim.toml"
    spec.write_text(
        f'name = "reclaim"\nblocks = 2\ntimeout = 600\n[[workloads]]\nname = "cycle"\nbuiltin = "memory.app_cycle"\n'
        f"options = {CYCLE}\n"
        f'[[variants]]\nname = "classic"\nmemory = {{ zram = "25%", zram_algorithm = "lz4", lru_gen = false, swappiness = 100 }}\n'
        f"{guest}\n"
        f'[[variants]]\nname = "mglru"\nmemory = {{ zram = "25%", zram_algorithm = "lz4", lru_gen = "y" }}\n{guest}\n'
    )
    swappiness, swaps = Path("/proc/sys/vm/swappiness").read_text(), Path("/proc/swaps").read_text()
    proc = cli("run", str(spec), "--format", "json", timeout=900, check=True)
    assert (Path("/proc/sys/vm/swappiness").read_text(), Path("/proc/swaps").read_text()) == (swappiness, swaps)
    rows = {(r["metric"], r["variant"]): r for r in json.loads(proc.stdout)["rows"]}
    assert ("launch_cold", "mglru") in rows and ("refault_anon", "mglru") in rows
    db = sqlite3.connect(os.environ["BENCHLAB_DB"])
    ran = db.execute(
        "SELECT v.name, d.details FROM run r JOIN variant v ON v.id = r.variant_id JOIN run_detail d ON d.run_id = r.id"
    ).fetchall()
    assert len(ran) == 4
    for variant, details in ran:
        reclaim = json.loads(details)["reclaim"]
        # the guest's own switch: 0x0000 off, the core and both optional features on
        assert reclaim["lru_gen"] == ("0x0007" if variant == "mglru" else "0x0000"), reclaim
        assert reclaim["zram"] == [{"device": "zram0", "disksize": 96 << 20, "algorithm": "lz4"}], reclaim
        assert reclaim["swap_kib"] > 0
        assert reclaim["swappiness"] == (100 if variant == "classic" else 60)
    sequences = {tuple(json.loads(d)["launches"]["app"]) for _, d in ran}
    assert len(sequences) == 1, "both kernels see the same launch sequence"
