"""The `memory` field checked before anything runs, its vm translation, and the journal's typed
entries (swap areas, zram devices) as `restore` finds them: hostile ones dropped, never executed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from benchlab.errors import EnvironmentProblem, SpecError
from benchlab.spec.models import EnvironmentSpec, MemorySpec, VariantSpec
from benchlab.spec.quick import parse_variant
from benchlab.variants import ballast, memory, swap
from benchlab.variants.knobs import KnobJournal
from benchlab.variants.memory import PreparedMemory, guest_environment, machine_memory

# --- the field ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "kept"),
    [("2G", 2 << 30), (1 << 30, 1 << 30), ("25%", "25%"), ("12.5%", "12.5%"), ("off", "off"), ("512MiB", 512 << 20)],
)
def test_zram_is_a_size_a_share_of_ram_or_off(written: object, kept: object) -> None:
    assert MemorySpec.model_validate({"zram": written}).zram == kept


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"zram": "lots"}, "is not a size such as 2G, a share of RAM such as 25%, or off"),
        ({"zram": "0%"}, "above 0% and at most 400%"),
        ({"zram": "401%"}, "above 0% and at most 400%"),
        ({"zram": "1M"}, "greater than or equal to 4194304"),
        ({"zram": True}, "valid integer"),
        ({"free": "1M"}, "greater than or equal to 16777216"),
        ({"zram_algorithm": "lz4"}, "zram_algorithm needs a zram size"),
        ({"zram": "off", "zram_algorithm": "lz4"}, "zram_algorithm needs a zram size"),
        ({"zram": "1G", "zram_algorithm": "lz4; reboot"}, "should match pattern"),
        ({"swappiness": "60"}, "valid integer"),  # strict, as every spec field
        ({"swappiness": 201}, "less than or equal to 200"),
        ({"lru_gen": "yes"}, "should match pattern"),
        ({"watermark_scale_factor": 0}, "greater than or equal to 1"),
        ({"swap": "1G"}, "Extra inputs are not permitted"),
    ],
)
def test_memory_fields_that_cannot_be_are_refused(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        MemorySpec.model_validate(fields)


@pytest.mark.parametrize(("written", "value"), [(True, "y"), (False, "n"), ("y", "y"), ("0x0007", "0x0007")])
def test_lru_gen_is_a_switch_or_a_mask(written: object, value: str) -> None:
    assert MemorySpec.model_validate({"lru_gen": written}).lru_gen == value


def test_a_share_of_ram_is_whole_pages_of_it() -> None:
    spec = MemorySpec.model_validate({"zram": "12.5%"})
    assert spec.zram_bytes(1000 << 20) == (125 << 20) // 4096 * 4096
    assert MemorySpec.model_validate({"zram": "off"}).zram_bytes(1 << 30) is None
    assert MemorySpec.model_validate({"zram": "3G"}).zram_bytes(1 << 30) == 3 << 30


def test_the_quick_form_sets_memory_fields_with_their_types() -> None:
    variant = parse_variant(
        "z: memory.zram=25% memory.free=2G memory.swappiness=100 memory.lru_gen=true memory.zram_algorithm=842"
    )
    spec = VariantSpec.model_validate(variant).memory
    assert spec is not None
    assert (spec.zram, spec.free, spec.swappiness, spec.lru_gen, spec.zram_algorithm) == ("25%", 2 << 30, 100, "y", "842")


# --- where it applies --------------------------------------------------------------------------


def vm_variant(memory_fields: dict[str, Any], **environment: Any) -> VariantSpec:
    return VariantSpec.model_validate({"name": "g", "memory": memory_fields, "environment": {"kind": "vm", **environment}})


def test_in_a_vm_the_field_becomes_the_guests_zram_swap_and_knobs() -> None:
    variant = vm_variant(
        {"zram": "25%", "zram_algorithm": "lz4", "lru_gen": "y", "swappiness": 100},
        memory="2G", modules=["binder_linux"], knobs={"/proc/sys/vm/page-cluster": "0"},
    )  # fmt: skip
    prepared, env = machine_memory(variant, "variants[0]")
    assert prepared is None  # nothing changes on this machine
    assert env.modules == ["binder_linux", "zram"] and env.swap == ["/dev/zram0"]
    assert list(env.knobs.items()) == [
        ("/proc/sys/vm/page-cluster", "0"),  # the environment's own first
        ("/sys/block/zram0/comp_algorithm", "lz4"),  # before the size, which fixes the algorithm
        ("/sys/block/zram0/disksize", str(512 << 20)),  # 25% of the guest's 2 GiB
        ("/proc/sys/vm/swappiness", "100"),
        ("/sys/kernel/mm/lru_gen/enabled", "y"),
    ]


def test_in_a_vm_zram_off_and_knobs_alone_leave_the_guest_without_swap() -> None:
    env = guest_environment(EnvironmentSpec(kind="vm"), MemorySpec(zram="off", lru_gen="n"), "variants[0].memory")
    assert (env.modules, env.swap, env.knobs) == ([], [], {"/sys/kernel/mm/lru_gen/enabled": "n"})


@pytest.mark.parametrize(
    ("memory_fields", "environment", "message"),
    [
        ({"free": "512M"}, {}, "variants[0].memory.free: a ballast takes memory from this machine's kernel"),
        ({"zram": "25%"}, {"swap": ["/dev/vdb"]}, "variants[0].memory.zram: environment.swap turns a guest's swap on too"),
        ({"zram": "off"}, {"swap": ["/dev/vdb"]}, "environment.swap turns a guest's swap on too"),
        ({"swappiness": 1}, {"knobs": {"/proc/sys/vm/swappiness": "9"}}, "environment.knobs sets /proc/sys/vm/swappiness"),
    ],
)
def test_what_a_guest_cannot_take_is_refused(memory_fields: dict[str, Any], environment: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError, match=re.escape(message)):
        machine_memory(vm_variant(memory_fields, **environment), "variants[0]")


def test_a_remote_hosts_memory_is_not_benchlabs_to_change() -> None:
    variant = VariantSpec.model_validate({"name": "r", "memory": {"swappiness": 1}, "environment": "ssh://lab"})
    with pytest.raises(SpecError, match=r"variants\[0\].memory: .*cannot apply to a remote host"):
        machine_memory(variant, "variants[0]")


def test_mglru_on_a_kernel_without_it_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(memory, "LRU_GEN", str(tmp_path / "no-lru_gen"))
    for fields, place in (({"lru_gen": "n"}, "lru_gen"), ({"lru_gen_min_ttl_ms": 1000}, "lru_gen_min_ttl_ms")):
        with pytest.raises(SpecError) as refused:
            PreparedMemory.prepare(MemorySpec.model_validate(fields), "variants[1].memory")
        assert str(refused.value) == (
            f"variants[1].memory.{place}: this kernel has no MGLRU (/sys/kernel/mm/lru_gen): "
            "run it in a vm guest whose kernel has CONFIG_LRU_GEN"
        )


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mkswap") is None, reason="swap is root's to change")
def test_an_algorithm_the_kernels_zram_lacks_is_refused_naming_those_it_has(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "zram0").mkdir()
    (tmp_path / "zram0" / "comp_algorithm").write_text("lzo [lzo-rle] lz4\n")
    monkeypatch.setattr(swap, "SYS_BLOCK", tmp_path)
    with pytest.raises(SpecError) as refused:
        PreparedMemory.prepare(MemorySpec(zram=64 << 20, zram_algorithm="zstd"), "variants[0].memory")
    assert (
        str(refused.value)
        == "variants[0].memory.zram_algorithm: this kernel's zram has no algorithm 'zstd' (it has lzo, lzo-rle, lz4)"
    )


# --- the journal's typed entries -----------------------------------------------------------------


@pytest.fixture
def swap_file(tmp_path: Path) -> Path:
    """A swap area that is never turned on: a file with mkswap's signature."""
    if shutil.which("mkswap") is None:
        pytest.skip("mkswap is not installed")
    path = tmp_path / "swapfile"
    path.write_bytes(bytes(1 << 20))
    path.chmod(0o600)
    subprocess.run(["mkswap", str(path)], check=True, capture_output=True)
    return path


def test_a_swapoff_entry_of_a_swap_area_is_understood(swap_file: Path) -> None:
    change = swap.change_of({"kind": "swapoff", "device": str(swap_file), "priority": 5})
    assert change == swap.SwapOff(str(swap_file), 5)
    assert swap.change_of(change.entry()) == change


def hostile_entries(swap_file: Path, tmp_path: Path) -> dict[str, Any]:
    link = tmp_path / "link"
    link.symlink_to(swap_file)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    plain = tmp_path / "plain"
    plain.write_bytes(bytes(8192))
    area = str(swap_file)
    return {
        "a link to a swap area": {"kind": "swapoff", "device": str(link), "priority": 1},
        "dot-dot": {"kind": "swapoff", "device": f"{tmp_path}/../{tmp_path.name}/swapfile", "priority": 1},
        "a second spelling": {"kind": "swapoff", "device": area.replace("/swapfile", "//swapfile"), "priority": 1},
        "relative": {"kind": "swapoff", "device": "swapfile", "priority": 1},
        "a named pipe": {"kind": "swapoff", "device": str(fifo), "priority": 1},
        "a folder": {"kind": "swapoff", "device": str(tmp_path), "priority": 1},
        "no swap signature": {"kind": "swapoff", "device": str(plain), "priority": 1},
        "/etc/passwd": {"kind": "swapoff", "device": "/etc/passwd", "priority": 1},
        "an option": {"kind": "swapoff", "device": "--all", "priority": 1},
        "NUL": {"kind": "swapoff", "device": area + "\u0000x", "priority": 1},
        "a priority in text": {"kind": "swapoff", "device": area, "priority": "1; reboot"},
        "a priority as a flag": {"kind": "swapoff", "device": area, "priority": True},
        "a priority too high": {"kind": "swapoff", "device": area, "priority": 40000},
        "an extra key": {"kind": "swapoff", "device": area, "priority": 1, "then": "reboot"},
        "no priority": {"kind": "swapoff", "device": area},
        "an unknown kind": {"kind": "mkfs", "device": area},
        "a kind that is a list": {"kind": ["swapoff"], "device": area, "priority": 1},
        "a zram path": {"kind": "zram", "device": "/dev/sda", "added": True, "algorithm": "lz4"},
        "zram dot-dot": {"kind": "zram", "device": "zram0/../../sda", "added": True, "algorithm": "lz4"},
        "a vanished zram": {"kind": "zram", "device": "zram9999", "added": True, "algorithm": "lz4"},
        "added in text": {"kind": "zram", "device": "zram0", "added": "yes", "algorithm": "lz4"},
        "an algorithm with a newline": {"kind": "zram", "device": "zram0", "added": False, "algorithm": "lz4\nzstd"},
        "no algorithm": {"kind": "zram", "device": "zram0", "added": False},
        "a ramfs at the root": {"kind": "ramfs", "mount": "/"},
        "a ramfs elsewhere": {"kind": "ramfs", "mount": "/proc/ballast-0123456789abcdef"},
        "a ramfs dot-dot": {"kind": "ramfs", "mount": "/run/benchlab/ballast-0123456789abcdef/../../.."},
        "a ramfs of another name": {"kind": "ramfs", "mount": "/run/benchlab/user"},
        "a ramfs mount as a list": {"kind": "ramfs", "mount": ["/run/benchlab/ballast-0123456789abcdef"]},
        "a ramfs with a device": {"kind": "ramfs", "mount": "/run/benchlab/ballast-0123456789abcdef", "device": "/"},
    }


def test_restore_drops_every_hostile_typed_entry_and_executes_none(
    swap_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    executed: list[object] = []
    monkeypatch.setattr(swap, "run_tool", lambda argv: executed.append(argv))
    monkeypatch.setattr(swap, "write_sysfs", lambda path, value: executed.append((path, value)))
    entries = hostile_entries(swap_file, tmp_path)
    journal = KnobJournal(tmp_path / "knobs.journal")
    journal.path.write_text("".join(json.dumps(e) + "\n" for e in entries.values()))
    done = journal.restore()
    assert executed == [] and done.restored == [] and done.failed == []
    assert len(done.dropped) == len(entries), done.dropped
    assert all(note.endswith("; not restored") for note in done.dropped)
    assert not journal.path.exists()  # nothing left that could ever be undone


def test_a_typed_entry_whose_undoing_fails_stays_journalled(
    swap_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(argv: list[str]) -> None:
        raise EnvironmentProblem(f"`{' '.join(argv)}` failed: Operation not permitted")

    monkeypatch.setattr(swap, "run_tool", refuse)
    entry = {"kind": "swapoff", "device": str(swap_file), "priority": 3}
    journal = KnobJournal(tmp_path / "knobs.journal")
    journal.path.write_text(json.dumps(entry) + "\n")
    done = journal.restore()
    assert done.failed == [f"`swapon -p 3 {swap_file}` failed: Operation not permitted"]
    assert journal.entries() == [entry]


def test_a_ballast_refuses_a_ramfs_folder_others_may_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mounted: list[object] = []
    monkeypatch.setattr(swap, "run_tool", lambda argv: mounted.append(argv))
    shared = tmp_path / "benchlab"
    shared.mkdir()
    shared.chmod(0o777)  # anyone could swap a ballast folder for a link before the mount
    monkeypatch.setattr(ballast, "RAMFS_ROOT", shared)
    with pytest.raises(EnvironmentProblem, match="is not a folder only this user may write"):
        ballast.RamfsBallast(str(shared / "ballast-0123456789abcdef")).make(4096)
    assert mounted == []


def test_a_missing_tool_is_one_line_not_a_traceback() -> None:
    with pytest.raises(EnvironmentProblem, match="`/nonexistent/mount` cannot run: No such file or directory"):
        swap.run_tool(["/nonexistent/mount", "-t", "ramfs"])
