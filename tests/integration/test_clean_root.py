"""Set-up from nothing, proved: a clean Debian 12 root (mmdebstrap's minbase) holding only what the
README says a user starts with (Python 3.11, gcc, and Rust from rustup, here the host's toolchain
bound in) gets a clone of the committed tree; `./dev demo` must install everything and pass there,
then a vm run must boot a guest there and `benchlab doctor` find nothing missing for guests.

Every Debian package beyond the starting set is installed by `./dev` inside the root, from the
network. To keep the cost bounded, caches are shared with the host where that proves nothing less:
uv's download cache, cargo's registry (crates as downloaded) and, where the host has built the
probe, its cargo target folder as the lower layer of an overlay mounted at the same path (so that
only the probe's own crates are compiled and linked there, with the root's gcc; the host's folder
is never written). The machine's own extra CA certificates (a TLS proxy's, where there is one) are
copied in, as a real machine holds its own. On this project's 2-core VM, shared with other jobs, it
took 21 minutes: the root 5, `./dev demo` 14.5 (apt, uv, the probe's own crates, the demo), the vm
run 1.25 (Debian's kernel fetched with apt, two guests booted under TCG).

Everything runs in a private mount namespace, and every process whose root is the clean root
(qemu included) is killed when the command has ended, whatever happened: the mounts vanish with the
namespace's last process, and the root is then removed. (No PID namespace: benchlab tells a live
run's cgroup from a stale one by the launcher's PID, so a benchlab in another PID namespace sharing
this machine's cgroup tree would kill runs of the host's, and the host's its.)"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchlab.measure import programs
from tests.docs.doc_commands import ROOT

pytestmark = [
    pytest.mark.shared("clean-root"),
    pytest.mark.slow,
]  # a worker of its own for its 4 minutes: a Debian root and a guest

# What the README says a user starts with; libc6-dev is what `apt-get install gcc` brings beside it
START_PACKAGES = ("python3", "gcc", "libc6-dev")
SOURCES = (
    "deb http://deb.debian.org/debian bookworm main",
    "deb http://deb.debian.org/debian bookworm-updates main",
    "deb http://deb.debian.org/debian-security bookworm-security main",
)
CLONE = "/root/benchlab"

VM_SPEC = """name = "clean-root-vm"
blocks = 2
warmup = 0
timeout = 120

[[workloads]]
name = "kernel"
command = ["sh", "-c", "uname -r; cat /proc/cmdline"]

[[variants]]
name = "here"

[[variants]]
name = "guest"
environment = { kind = "vm", accel = "tcg", memory = "1G", cpus = 1 }
"""

# Each stage writes `STAGE name seconds` when it ends; the test reports the times.
SCRIPT = f"""set -euo pipefail
stage() {{ echo "STAGE $1 $(( $(date +%s) - start ))" >> /root/stages.log; start=$(date +%s); }}
start=$(date +%s)
cd {CLONE}
./dev demo
stage dev-demo
. .venv/bin/activate
benchlab doctor > /root/doctor.txt
stage doctor
benchlab run /root/vm.toml
stage vm-run
benchlab report clean-root-vm --format md > /root/report.md
"""


@pytest.fixture()
def rust_homes() -> tuple[Path, Path]:
    """The host's rustup toolchain and cargo home, bound into the root as a user's own."""
    rustup = Path(os.environ.get("RUSTUP_HOME", Path.home() / ".rustup"))
    cargo = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo"))
    if not (rustup / "toolchains").is_dir() or not (cargo / "bin" / "cargo").exists():
        pytest.skip("no rustup toolchain here to give the clean root (the README's Rust comes from rustup)")
    return rustup, cargo


def _host_target() -> Path | None:
    """The host's probe build, if there is one: an overlay's lower layer in the root."""
    target = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "probe" / "target").resolve()
    return target if (target / "release").is_dir() else None


def _mounts_under(folder: Path) -> list[str]:
    """Mount points at or under the folder, as this test's own mount namespace sees them."""
    points = (line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines())
    return [p for p in points if p == str(folder) or p.startswith(f"{folder}/")]


def _remove(folder: Path) -> None:
    """rm -rf, but never through a mount: one left would lead into the host's own folders."""
    left = _mounts_under(folder)
    assert not left, f"still mounted, so {folder} is kept: {left}"
    subprocess.run(["rm", "-rf", "--one-file-system", str(folder)], check=False)


def _namespaced(root: Path, mounts: list[str], command: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """`command` (a chroot into `root`) after `mounts`, in a new mount namespace: however it ends
    (done, failed, or killed at the timeout), every process left in the root is killed, and the
    mounts vanish with the last of them."""
    inner = " && ".join([*mounts, f"exec {command}"])
    try:
        return subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "--kill-child", "sh", "-c", inner],
            capture_output=True, text=True, timeout=timeout, env={"PATH": os.environ["PATH"]},
        )  # fmt: skip
    finally:
        _kill_inside(root)


def _inside(root: Path) -> list[int]:
    """The processes whose root folder is `root`: every one started in the chroot."""
    want = root.stat()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and os.path.samestat((entry / "root").stat(), want):
                found.append(int(entry.name))
        except OSError:  # gone, or a kernel thread
            continue
    return found


def _kill_inside(root: Path) -> None:
    deadline = time.monotonic() + 30
    while (left := _inside(root)) and time.monotonic() < deadline:
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
    assert not left, f"processes {left} in {root} outlived SIGKILL"


def _system_mounts(root: Path) -> list[str]:
    r = shlex.quote(str(root))
    return [f"mount -t proc proc {r}/proc", f"mount --rbind /sys {r}/sys", f"mount --rbind /dev {r}/dev"]


def _need_namespaces() -> None:
    if os.geteuid() != 0:
        pytest.skip("a chroot needs root")
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not installed (util-linux)")


@pytest.fixture()
def clean_root(tmp_path: Path) -> Iterator[Path]:
    """A minbase Debian 12 with only START_PACKAGES, removed after the test whatever happened."""
    _need_namespaces()
    for tool in ("mmdebstrap", "git"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (the README's test command installs mmdebstrap)")
    root = tmp_path / "root"
    try:
        subprocess.run(
            ["mmdebstrap", "--variant=minbase", f"--include={','.join(START_PACKAGES)}", "--quiet", "bookworm", str(root), *SOURCES],
            check=True, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        yield root
    finally:
        for made in (root, tmp_path / "target-overlay"):
            _remove(made)


def _prepare(root: Path, rustup: Path, cargo: Path, target: Path | None) -> tuple[list[str], dict[str, str]]:
    """The clone, the spec and the CA certificates put in; the mounts (made inside the namespace) and
    the environment the chroot's shell gets, which is a login's, not this test's."""
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(root / CLONE.lstrip("/"))], check=True)
    (root / "root" / "vm.toml").write_text(VM_SPEC)
    (root / "root" / "setup.sh").write_text(SCRIPT)
    local_cas = root / "usr" / "local" / "share" / "ca-certificates"
    for ca in Path("/usr/local/share/ca-certificates").glob("*.crt"):
        local_cas.mkdir(parents=True, exist_ok=True)
        shutil.copy(ca, local_cas / ca.name)
    shutil.copy("/etc/resolv.conf", root / "etc" / "resolv.conf")
    r = shlex.quote(str(root))
    mounts = [
        *_system_mounts(root),
        f"mkdir -p {r}/root/.rustup {r}/root/.cargo {r}/root/.cache/uv",
        f"mount --bind {shlex.quote(str(rustup))} {r}/root/.rustup",
        f"mount --bind {shlex.quote(str(cargo))} {r}/root/.cargo",
    ]
    uv_cache = Path.home() / ".cache" / "uv"
    if uv_cache.is_dir():
        mounts.append(f"mount --bind {shlex.quote(str(uv_cache))} {r}/root/.cache/uv")
    env = {
        "HOME": "/root",
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "LANG": "C.UTF-8",
        "TERM": "dumb",
    }
    env |= {
        k: v for k, v in os.environ.items() if k.endswith(("_CERT_FILE", "_CERT_DIR", "CA_BUNDLE")) and v.startswith("/etc/ssl/")
    }
    if target is not None:
        layers = root.parent / "target-overlay"
        (layers / "upper").mkdir(parents=True)
        (layers / "work").mkdir()
        inside = f"{r}{shlex.quote(str(target))}"
        mounts += [
            f"mkdir -p {inside}",
            f"mount -t overlay overlay -o lowerdir={shlex.quote(str(target))},upperdir={layers}/upper,workdir={layers}/work {inside}",
        ]
        env["CARGO_TARGET_DIR"] = str(target)
    return mounts, env


@pytest.mark.timeout(3600)
def test_the_readme_set_up_makes_a_clean_debian_12_run_the_demo_and_boot_a_guest(
    rust_homes: tuple[Path, Path], clean_root: Path
) -> None:
    root = clean_root
    mounts, env = _prepare(root, *rust_homes, _host_target())
    chroot = shlex.join(["env", "-i", *(f"{k}={v}" for k, v in env.items()), "chroot", str(root), "bash", "/root/setup.sh"])
    began = time.monotonic()
    proc = _namespaced(root, mounts, chroot, timeout=3500)
    took = time.monotonic() - began
    stages_log = root / "root" / "stages.log"
    stages = stages_log.read_text() if stages_log.exists() else "no stage ended\n"
    print(f"clean root: {took:.0f} s in all\n{stages}")
    tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-60:])
    assert proc.returncode == 0, f"{stages}{tail}"
    assert "STAGE vm-run" in stages
    doctor = (root / "root" / "doctor.txt").read_text()
    for program in programs.VM_PROGRAMS:  # what ./dev installed for guests, as doctor sees it
        assert f"ok vm {program.name}: " in doctor, doctor
    report = (root / "root" / "report.md").read_text()
    assert "guest" in report and "here" in report


def test_the_chroot_leaves_no_mount_and_no_process_behind_when_its_command_fails_or_hangs(tmp_path: Path) -> None:
    _need_namespaces()
    root = tmp_path / "root"
    for folder in ("proc", "sys", "dev", "usr"):
        (root / folder).mkdir(parents=True)
    for link in ("bin", "sbin", "lib", "lib64"):  # merged /usr: the host's, bound in, is a root to chroot into
        (root / link).symlink_to(f"usr/{link}")
    mounts = [*_system_mounts(root), f"mount --rbind /usr {shlex.quote(str(root))}/usr"]
    chroot = f"chroot {shlex.quote(str(root))}"
    assert _namespaced(root, mounts, f"{chroot} false", timeout=60).returncode == 1
    assert not _mounts_under(root)
    hung = "sleep 987.25"  # a child of its own and a grandchild, as a guest's qemu would be
    with pytest.raises(subprocess.TimeoutExpired):
        _namespaced(root, mounts, f"{chroot} sh -c '{hung} & {hung}; wait'", timeout=3)
    assert not _mounts_under(root)
    assert not _processes(hung)
    _remove(root)
    assert not root.exists()


def _processes(command: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().replace(b"\0", b" ").strip() == command.encode():
                found.append(int(entry.name))
        except OSError:
            continue
    return found
