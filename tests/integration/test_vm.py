"""`environment = "vm"` for real: Debian's kernel, fetched with apt into benchlab's cache once for
the session, boots under qemu's emulation (TCG: KVM hangs on this machine's guests) with this
system's files as its root; runs come back with the guest's kernel as their host."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from benchlab.errors import WorkloadFailed
from benchlab.locate import probe_path
from benchlab.measure.guest import SHARE_PREFIX, Guest, GuestExecutor
from benchlab.measure.process import Launch
from benchlab.measure.served import ANSWER_GRACE_S
from benchlab.variants import kernels
from tests.conftest import BENCHLAB, cli, need, signals_as_at_a_terminal

pytestmark = pytest.mark.slow  # boots guests (of the `guests` group: the session's kernel)


def _spec(
    path: Path,
    kernel: kernels.GuestKernel,
    workloads: dict[str, str],
    environment: str,
    blocks: int = 2,
    extra: str = "",
    timeout: int = 60,
) -> Path:
    text = [f'name = "{path.stem}"', f"blocks = {blocks}", "warmup = 0", f"timeout = {timeout}", extra]
    for name, command in workloads.items():
        text += ["[[workloads]]", f'name = "{name}"', f"command = {json.dumps(['sh', '-c', command])}"]
    accel = "" if "accel" in environment else 'accel = "tcg", '
    text += ["[[variants]]", 'name = "guest"', f"environment = {{ kind = \"vm\", kernel = \"{kernel.source.split('_')[0]}\", "
             f"{accel}{environment} }}"]  # fmt: skip
    path.write_text("\n".join(text) + "\n")
    return path


def _stored_runs(db: str) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return int(conn.execute("SELECT count(*) FROM run").fetchone()[0])
    except sqlite3.Error:  # not made yet
        return 0


def _guests_running() -> list[str]:
    """Every qemu whose root is this machine's: the clean-root test boots guests of its own in a chroot,
    on another worker at the same time, and those are not this module's to count."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
            in_this_root = os.readlink(proc / "root") == "/"
        except (OSError, ValueError):
            continue  # not a process, or one that ended while read
        if in_this_root and "qemu-system" in Path(args[0].decode(errors="replace")).name:
            found.append(b" ".join(args).decode(errors="replace"))
    return found


BINDER_WORKLOADS = (
    '[[workloads]]\nname = "bt"\nbuiltin = "ipc.binder.throughput"\noptions = { iterations = 50, max-payload = "4k" }\n'
    '[[workloads]]\nname = "bl"\nbuiltin = "ipc.binder.latency"\n'
    "options = { iterations = 200, inject-delay-us = 4000, inject-every = 20 }"
)


def test_a_guest_loads_its_modules_writes_its_knobs_balloons_and_is_the_runs_host(
    guest_kernel: kernels.GuestKernel, tmp_path: Path
) -> None:
    """One guest for many checks (a boot under TCG costs ~12 s): MGLRU, zram swap, a balloon,
    auto's fallback from a hanging KVM, and real binder in an experiment (this host has none;
    Debian's kernel ships binder_linux as a module)."""
    switches = guest_kernel.switches()
    if switches["lru_gen"] is None or switches["binder"] != "m":
        pytest.skip(f"{guest_kernel.release} has no MGLRU or no binder module")
    refusal = (
        f"said=$({probe_path()} ipc.binder.latency --pair 2 --force 1 2>&1) && exit 1; "  # refused, with the reason:
        "echo \"$said\" | grep -q 'binder runs at most 1 pair(s) at once: a binder device has one context manager'"
    )
    spec = _spec(
        tmp_path / "mglru.toml", guest_kernel,
        {"mglru-on": "grep -qx 0x0007 /sys/kernel/mm/lru_gen/enabled",
         "zram-swap": "grep -q '^/dev/zram0 ' /proc/swaps && grep -q '\\[lz4\\]' /sys/block/zram0/comp_algorithm",
         "release": f'test "$(uname -r)" = {guest_kernel.release}',
         "disk": "grep -q ' /var/benchlab/disk ext4 ' /proc/mounts && echo x > /var/benchlab/disk/f",
         "ballooned": "awk '/^MemTotal/ { exit !($2 < 800000) }' /proc/meminfo",  # 1 GiB shrunk to 768 MiB
         "reporting": "cut -c6 /sys/bus/virtio/drivers/virtio_balloon/virtio*/features | grep -qx 1",  # feature bit 5
         "binder-pairs": refusal},
        'modules = ["zram", "binder_linux"], knobs = { "/sys/kernel/mm/lru_gen/enabled" = "y", "/sys/block/zram0/comp_algorithm" = "lz4", '
        '"/sys/block/zram0/disksize" = "64M" }, swap = ["/dev/zram0"], disk = "64M", accel = "auto", kvm_boot_timeout = 5, '
        'balloon = { reporting = true, target = "768M" }', extra=BINDER_WORKLOADS,
    )  # fmt: skip
    done = cli("run", str(spec), "--db", str(tmp_path / "r.db"), "--format", "json", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert not report["failed_runs"] and len(report["runs"]) == 2 * 9
    runs = {run["workload"]: run["metrics"] for run in report["runs"]}
    assert runs["bt"]["ipc.binder.throughput/4096:bytes_per_second"] > 0
    assert runs["bl"]["ipc.binder.latency/other:misses"] >= 10  # the 10 injected 4 ms delays (TCG is slow: maybe more)
    guest = next(fp for fp in report["experiment"]["hosts"].values() if fp.get("guest_of"))
    assert guest["kernel"] == guest_kernel.release and guest["kernel_switches"]["lru_gen"] == "y"
    assert guest["virtualization"] == f"qemu ({guest['accel']})"
    if guest["accel"] == "tcg":  # auto fell back: where KVM hangs (as here) after its 5 s, where it is absent at once
        assert "booting under tcg instead" in done.stderr and guest["emulated"] is True
        assert any("emulated (qemu TCG)" in w for w in report["warnings"])
    else:
        assert guest["accel"] == "kvm" and guest["emulated"] is False
    assert _guests_running() == []


def test_what_the_guest_kernel_lacks_is_one_line_naming_it(guest_kernel: kernels.GuestKernel, tmp_path: Path) -> None:
    missing = cli("run", str(_spec(tmp_path / "m.toml", guest_kernel, {"t": "true"}, 'modules = ["no_such_module"]')),
                  "--db", str(tmp_path / "r.db"))  # fmt: skip
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    assert f"the guest kernel {guest_kernel.release} has no module no_such_module" in missing.stderr
    knob = cli("run", str(_spec(tmp_path / "k.toml", guest_kernel, {"t": "true"}, 'knobs = { "/sys/kernel/mm/no_knob" = "1" }')),
               "--db", str(tmp_path / "r.db"), timeout=600)  # fmt: skip
    assert knob.returncode == 2 and knob.stderr.count("\n") == 1, knob.stderr
    assert f"the guest kernel {guest_kernel.release} has no /sys/kernel/mm/no_knob" in knob.stderr
    assert _guests_running() == []


def test_a_guest_virtme_ng_cannot_start_is_one_line_naming_the_package(guest_kernel: kernels.GuestKernel, tmp_path: Path) -> None:
    """The real vng where no statically linked busybox is installed: in a mount namespace of the test's own,
    every busybox vng would find is a dynamically linked program (or there is none at all)."""
    if os.geteuid() != 0:
        pytest.skip("a mount namespace needs root")
    need("unshare")
    found = {os.path.realpath(f"{folder}/{name}") for name in ("busybox-static", "busybox.static", "busybox")
             for folder in [*os.environ["PATH"].split(os.pathsep), "/usr/local/bin", "/usr/local/sbin", "/usr/bin",
                            "/usr/sbin", "/bin", "/sbin"] if os.path.isfile(f"{folder}/{name}")}  # fmt: skip
    hide = "".join(f"mount --bind /bin/true {path} && " for path in sorted(found))
    spec = _spec(tmp_path / "nobusybox.toml", guest_kernel, {"t": "true"}, "cpus = 1")
    proc = subprocess.Popen(["unshare", "--mount", "sh", "-c", f'{hide}exec "$@"', "sh", BENCHLAB, "run", str(spec),
                             "--db", str(tmp_path / "r.db")], stderr=subprocess.PIPE, text=True)  # fmt: skip
    _, stderr = proc.communicate(timeout=120)  # unshare and sh exec: the pid is benchlab's
    assert proc.returncode == 3 and stderr.count("\n") == 1, stderr
    assert "busybox" in stderr and "apt-get install busybox-static" in stderr and "Traceback" not in stderr
    assert _guests_running() == [] and not list(Path(tempfile.gettempdir()).glob(f"{SHARE_PREFIX}{proc.pid}-*"))


def test_a_guest_that_panics_fails_its_run_with_its_lines_and_the_next_run_boots_a_new_one(
    guest_kernel: kernels.GuestKernel, tmp_path: Path
) -> None:
    spec = _spec(tmp_path / "panic.toml", guest_kernel, {"panic": "echo panicking >&2; echo c > /proc/sysrq-trigger; sleep 5"},
                 "cpus = 1")  # fmt: skip
    done = cli("run", str(spec), "--db", str(tmp_path / "r.db"), "--format", "json", timeout=900)
    assert done.returncode == 5, done.stderr[-2000:]
    failed = json.loads(done.stdout)["failed_runs"]
    assert len(failed) == 2  # both blocks ran: the second in a new guest
    for run in failed:  # the run's own lines: the panic it caused and its stderr, not the boot's
        assert "stopped answering: it ended during the run; its console during the run: " in run["message"]
        assert "Kernel panic - not syncing: sysrq triggered crash" in run["message"], run["message"]
        assert run["message"].endswith("the run's stderr: panicking") and "virtme-ng-init" not in run["message"]
    assert _guests_running() == []


def test_a_guest_that_stops_answering_fails_its_run_at_its_timeout_plus_the_grace(
    guest_kernel: kernels.GuestKernel, tmp_path: Path
) -> None:
    """The guest's launcher stopped mid-run (its channel says nothing, its kernel runs on): given up
    on at the run's timeout plus ANSWER_GRACE_S, named with that run's lines, and no guest is left."""
    guest = Guest(
        label="vm hang", image=guest_kernel.image, release=guest_kernel.release, memory=512 << 20, cpus=1, accel="tcg",
        modules=(), knobs=(), swap=(), disk=None, cmdline=None, fresh=False, kvm_boot_timeout=30, balloon=None, facts={},
    )  # fmt: skip
    executor = GuestExecutor(guest)
    try:
        executor.prepare()
        hang = Launch(argv=("sh", "-c", "echo about to stop >&2; kill -STOP $PPID; sleep 60"), env=dict(os.environ), timeout=3)
        started = time.monotonic()
        with pytest.raises(WorkloadFailed) as caught:
            executor.run(hang)
        assert time.monotonic() - started < 3 + ANSWER_GRACE_S + 5  # the clean-up's few seconds beside
    finally:
        executor.close()
    assert caught.value.message == (
        f"the guest (vm hang) stopped answering: no answer within the run's timeout of 3 s + {ANSWER_GRACE_S:g} s; "
        "its console during the run: nothing; the run's stderr: about to stop"
    )
    assert caught.value.stderr_tail == "about to stop\n" and _guests_running() == []


def test_fresh_guests_and_kill_9_leave_no_guest_and_resume_finishes_on_the_same_host(
    guest_kernel: kernels.GuestKernel, tmp_path: Path
) -> None:
    # fresh: every run boots its own guest, whose /tmp (a tmpfs overlay) has never seen the marker
    marker = f"/tmp/benchlab-seen-{tmp_path.name}"
    once = f"test ! -e {marker} && touch {marker} && sleep 0.2"
    spec = _spec(tmp_path / "resume.toml", guest_kernel, {"nap": once}, "cpus = 1, fresh = true", blocks=3)
    db = str(tmp_path / "r.db")
    proc = subprocess.Popen([BENCHLAB, "run", str(spec), "--db", db], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, preexec_fn=signals_as_at_a_terminal)  # fmt: skip
    deadline = time.monotonic() + 300
    while _stored_runs(db) < 1 and time.monotonic() < deadline:  # the guest has booted and serves runs
        time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while _guests_running() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _guests_running() == []
    resumed = cli("run", str(spec), "--db", db, "--resume", "--format", "json", timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    report = json.loads(resumed.stdout)
    assert len(report["runs"]) == 3 and not report["failed_runs"]
    assert len({run["host"] for run in report["runs"]}) == 1  # one guest identity across boots
    assert not list(Path(tempfile.gettempdir()).glob(f"{SHARE_PREFIX}{proc.pid}-*"))  # the killed one's folders went


def test_binder_latency_in_a_guest_with_the_ipc_command(guest_kernel: kernels.GuestKernel) -> None:
    """`benchlab ipc latency -m binder -e vm`: one guest for the command, binder_linux loaded in it."""
    if guest_kernel.switches()["binder"] != "m":
        pytest.skip(f"{guest_kernel.release} has no binder module")
    android = cli("ipc", "latency", "-m", "binder", "-i", "200", "-e", "vm accel=tcg", "--format", "android", timeout=600)
    assert android.returncode == 0, android.stderr[-3000:]
    latency = json.loads(android.stdout)
    assert latency["cfg"]["mechanism"] == "binder" and latency["ALL"]["I"] == 400 and latency["inheritance"] == "PASS"
    assert "emulated (qemu TCG)" in android.stderr
    assert _guests_running() == []


def test_native_and_guest_scores_side_by_side_paired_by_block(guest_kernel: kernels.GuestKernel, tmp_path: Path) -> None:
    """The docs' native vs VM score table (docs/environments.md), run as written: the guest's runs
    are stored under the guest's kernel yet paired with the native runs of their blocks."""
    db = str(tmp_path / "r.db")
    table = cli("score", "--quick", "-w", "nbody", "-V", "native", "-V", "linux-vm: environment=vm environment.accel=tcg",
                "--db", db, timeout=900)  # fmt: skip
    assert table.returncode == 0, table.stderr[-3000:]
    assert "linux-vm delta vs native" in table.stdout and "emulated (qemu TCG)" in table.stdout + table.stderr
    with sqlite3.connect(db) as conn:
        (name,) = conn.execute("SELECT name FROM experiment").fetchone()
        kernels_seen = {json.loads(fp)["kernel"] for (fp,) in conn.execute("SELECT fingerprint FROM host")}
    assert guest_kernel.release in kernels_seen and len(kernels_seen) == 2  # the guest is a host of its own
    report = json.loads(cli("report", name, "--db", db, "--format", "json", check=True).stdout)
    assert report["variants"] == ["native", "linux-vm"]  # one machine: no column per host
    rows = [r for r in report["rows"] if r["variant"] == "linux-vm" and r["metric"] == "items_per_second"]
    assert rows and all(r["pairs"] == 3 for r in rows)  # paired block by block with the native runs
    assert _guests_running() == []


def test_profiled_runs_in_a_guest_name_its_kernels_reclaim(guest_kernel: kernels.GuestKernel, tmp_path: Path) -> None:
    """A guest of 128 MiB writes 128 MiB to its data disk: its page cache must be reclaimed as it
    goes, by kswapd and by the writer itself (direct reclaim). Profiled system-wide, the guest's own
    perf folds the samples with the guest kernel's symbols."""
    need("perf")
    spec = _spec(
        tmp_path / "reclaim.toml", guest_kernel, {"write": "dd if=/dev/zero of=/var/benchlab/disk/f bs=1M count=128 2>/dev/null"},
        'memory = "128M", disk = "1G"', extra='profile = { frequency = 199 }',  # in a guest: the whole guest by default
        timeout=300,  # emulated, beside the rest of the suite: a profiled run took over 2 minutes in CI
    )  # fmt: skip
    cli("run", str(spec), check=True, timeout=1500)
    explained = json.loads(cli("explain", "reclaim", "--format", "json", check=True).stdout)
    assert explained["runs"] == 2 and explained["failed"] == 0, explained["notes"]
    frames = {f["name"] for graph in explained["flames"] for f in graph["frames"]}
    assert {"shrink_node", "shrink_lruvec"} & frames, sorted(frames)[:80]  # the guest kernel's reclaim, by its symbols
    # by kswapd (its own process at the root), or by the writer itself (direct reclaim), or both
    assert any(name.startswith("kswapd") for name in frames) or "try_to_free_pages" in frames, sorted(frames)[:80]
    assert _guests_running() == []
