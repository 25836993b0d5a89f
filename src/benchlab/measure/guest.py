"""Runs inside a virtual machine (`environment = "vm"`): a kernel of the variant's choice booted
by virtme-ng, with this system's files as its root (read-only, over 9p), so that benchlab's
launcher, the probe, the shim and the workloads' programs are simply there.

Each guest runs one served launcher (`benchlab-launch --serve`, the one `measure.served` runs
here), whose requests and answers travel over the guest's virtio-serial script channel (vng's
stdin and stdout): every run has the usual wait4 account, measured inside the guest. The
launcher's output files lie in a folder shared read-write with the guest, where this side reads
their tails. Before it starts, the guest loads the variant's modules, writes its knobs, turns on its swap and sends
its fingerprint, as one JSON line. One guest serves all of a variant's runs (or, `fresh`, each
run boots its own); a guest that dies, or gives no answer within the run's timeout plus a
grace, fails its run with its own lines from that run (its console since the run was sent and
the run's stderr), and the next run boots a new one. vng runs under a one-shot launcher: it dies with benchlab, and
qemu (which vng becomes) with it.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from benchlab import notes
from benchlab.errors import EnvironmentProblem, SpecError, WorkloadFailed
from benchlab.locate import launcher_path
from benchlab.measure.host import REMOTE_FINGERPRINT, parse_remote_fingerprint
from benchlab.measure.process import Finished, Launch, start_launcher, stop_tree
from benchlab.measure.served import ANSWER_GRACE_S, Serving, request_line

GUEST_PROTOCOL = 1  # the boot line the guest sends
SHARE_PREFIX = "benchlab-guest-"  # then the pid of the benchlab that booted it
TCG_BOOT_TIMEOUT_S = 300.0  # to the boot line; TCG boots Debian's kernel in ~11 s here
# How a guest boots faster without changing what it runs (16.3 s -> 11.5 s a boot under TCG here):
# its root is always 9p, the same on every host (vng first waits 3.3 s for a virtiofsd that
# Debian 12's qemu cannot start, then falls back to 9p; where one could start, a guest's file IO
# would silently differ between hosts); and udev does not load drivers for qemu's emulated
# hardware that no run uses (nested KVM, the CD-ROM, AHCI, watchdog, SMBus, speaker: ~1.5 s of
# modprobes under emulation). A blacklist stops only udev's loading: `modules` still loads any.
FAST_BOOT = ("--force-9p", "--append", "modprobe.blacklist=kvm_amd,kvm_intel,sr_mod,ahci,iTCO_wdt,i2c_i801,lpc_ich,pcspkr")
log = notes.logger(__name__)
CONSOLE_TAIL_BYTES = 2000
STDERR_QUOTE_CHARS = 500  # of a run's stderr, in the message of a guest that stopped answering
GUEST_DISK = "/var/benchlab/disk"  # /var is one of the guest's writable overlays: a mount point can be made there
PANIC_WORDS = ("Kernel panic", "Oops", "BUG:", "sysrq: Trigger a crash")
# What virtme-ng prints, and exits, where it cannot make the guest's initramfs (virtme/commands/run.py)
NO_STATIC_BUSYBOX = ("no busybox was found", "a statically linked busybox could not be found")


class _CannotStart(EnvironmentProblem):
    """virtme-ng refused before qemu started: the same on every accelerator, so none is tried next."""


BALLOON_DRIVER = "virtio_balloon"
BALLOON_SETTLE_S = 120.0  # for the guest to give up memory down to its target (page by page under TCG)


@dataclass(frozen=True)
class Balloon:
    """A virtio balloon: free page reporting, and the size the guest is asked to shrink to."""

    reporting: bool
    target: int | None


@dataclass(frozen=True)
class Guest:
    """What a guest boots: the kernel image (modules beside it), its size, what it loads and writes."""

    label: str  # for messages: the variant's environment
    image: Path
    release: str
    memory: int
    cpus: int
    accel: str  # auto | kvm | tcg
    modules: tuple[str, ...]
    knobs: tuple[tuple[str, str], ...]
    swap: tuple[str, ...]
    disk: int | None  # bytes of a data disk, mounted at GUEST_DISK
    cmdline: str | None
    fresh: bool
    kvm_boot_timeout: float
    balloon: Balloon | None
    facts: dict[str, Any]  # added to the guest's fingerprint: where its kernel came from, its switches


def vng_path() -> str:
    found = shutil.which("vng", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if found is None:
        raise EnvironmentProblem("virtme-ng (vng) is not installed", hint="reinstall benchlab with `uv sync`")
    return found


def _boot_script(guest: Guest, share: Path) -> str:
    """The guest's first command: modules, knobs, the boot line, then the served launcher.
    A failure names what failed by its place in the variant's lists; this side words it."""
    lines = ['fail() { printf \'{"protocol":%d,"failed":"%s","index":%d}\\n\' ' + f"{GUEST_PROTOCOL}" + ' "$1" "$2"; exit 1; }']
    for i, module in enumerate(guest.modules):
        lines.append(f"modprobe {shlex.quote(module)} >/dev/null 2>&1 || fail module {i}")
    if guest.disk is not None:  # the only virtio-blk disk (the root is shared, not a disk); udev has made its node
        lines.append(f"mkdir -p {GUEST_DISK} && mount -t ext4 /dev/vda {GUEST_DISK} 2>/dev/null || fail disk 0")
    for i, (path, value) in enumerate(guest.knobs):
        quoted = shlex.quote(path)
        lines.append(f"[ -e {quoted} ] || fail knob_missing {i}")
        lines.append(f"printf '%s' {shlex.quote(value)} 2>/dev/null > {quoted} || fail knob {i}")
    for i, device in enumerate(guest.swap):
        quoted = shlex.quote(device)
        lines.append(f"mkswap {quoted} >/dev/null 2>&1 && swapon {quoted} 2>/dev/null || fail swap {i}")
    lines.append(f"fp=$(sh -c {shlex.quote(REMOTE_FINGERPRINT)} | base64 -w0)")
    lines.append(f'printf \'{{"protocol":{GUEST_PROTOCOL},"fingerprint":"%s"}}\\n\' "$fp"')
    out, err = shlex.quote(str(share / "out")), shlex.quote(str(share / "err"))
    lines.append(f"exec {shlex.quote(launcher_path())} --serve --stdout-fd 5 --stderr-fd 6 5>{out} 6>{err}")
    return "\n".join(lines) + "\n"


def clear_stale_shares() -> None:
    """Removes the shared folders (console, data disk) of guests whose benchlab was killed: a
    `kill -9` runs no clean-up. Each folder is named after its benchlab's pid; another live
    benchlab's are left alone."""
    for folder in Path(tempfile.gettempdir()).glob(f"{SHARE_PREFIX}*-*"):
        pid = folder.name.removeprefix(SHARE_PREFIX).split("-", 1)[0]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except PermissionError:  # alive, another user's
            pass


def _data_disk(folder: Path, size: int, label: str) -> Path:
    """A sparse file of `size` bytes with a new ext4 filesystem, made here (mkfs.ext4 of the host)
    before the guest boots, so that a failure is this side's to word."""
    image = folder / "disk.img"
    with image.open("wb") as file:
        file.truncate(size)
    proc = subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", str(image)], capture_output=True, text=True)
    if proc.returncode != 0:
        said = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise EnvironmentProblem(f"{label}: cannot make the data disk's filesystem: {said}")
    return image


def _balloon_options(balloon: Balloon | None, folder: Path) -> list[str]:
    """A PCI virtio balloon (so no microvm) and, for a target, qemu's QMP socket to ask for it."""
    if balloon is None:
        return []
    device = f"-device virtio-balloon-pci,id=balloon0{',free-page-reporting=on' if balloon.reporting else ''}"
    qmp = f" -qmp unix:{folder / 'qmp'},server=on,wait=off" if balloon.target is not None else ""
    return ["--disable-microvm", f"--qemu-opts={device}{qmp}"]  # `=`: vng would take a leading '-' for its option


def _shrink(socket_path: Path, target: int, label: str) -> None:
    """Asks qemu to shrink the guest to `target` bytes and waits until the balloon has taken the rest.

    QMP is JSON lines over a socket and three commands are needed; written here rather than with
    the qemu.qmp library, whose API is asyncio (with a deprecated synchronous shim)."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(10.0)
        sock.connect(str(socket_path))
        stream = sock.makefile("rwb")

        def ask(command: str, **arguments: Any) -> Any:
            stream.write(json.dumps({"execute": command, **({"arguments": arguments} if arguments else {})}).encode() + b"\n")
            stream.flush()
            while line := stream.readline():
                reply = json.loads(line)
                if "error" in reply:
                    raise EnvironmentProblem(f"{label}: qemu refused {command}: {reply['error'].get('desc')}")
                if "return" in reply:
                    return reply["return"]
            raise EnvironmentProblem(f"{label}: qemu closed its QMP socket")  # events (no return) are passed over

        stream.readline()  # the greeting
        ask("qmp_capabilities")
        ask("balloon", value=target)
        deadline = time.monotonic() + BALLOON_SETTLE_S
        while (actual := int(ask("query-balloon")["actual"])) > target + (1 << 20):
            if time.monotonic() > deadline:
                raise EnvironmentProblem(
                    f"{label}: the guest kept {actual >> 20} MiB, above the balloon's target of {target >> 20} MiB, "
                    f"after {BALLOON_SETTLE_S:.0f} s"
                )
            time.sleep(0.2)


class GuestExecutor:
    """Runs launches in one guest of a vm variant, booted on first use (`prepare`)."""

    def __init__(self, guest: Guest) -> None:
        self.guest = guest
        self.fingerprint: dict[str, Any] = {}
        self.accel: str | None = None  # what the first boot settled on
        self._serving: Serving | None = None
        self._vng: subprocess.Popen[bytes] | None = None
        self._share: tempfile.TemporaryDirectory[str] | None = None
        self._console: Any = None
        self._result: int | None = None

    def prepare(self) -> dict[str, Any]:
        """Boots the guest (once) and returns its fingerprint: the guest's, stored as the runs' host."""
        if self._serving is None:
            self._boot()
        return self.fingerprint

    def _boot(self) -> None:
        tries = [self.accel] if self.accel else (["kvm", "tcg"] if self.guest.accel == "auto" else [self.guest.accel])
        why = ""
        for accel in tries:
            if why:
                log.info("%s; booting under tcg instead", why)
            try:
                if accel == "kvm" and not os.access("/dev/kvm", os.R_OK | os.W_OK):
                    raise EnvironmentProblem(f"{self.guest.label}: KVM is not available here (no usable /dev/kvm)")
                self._start(accel)
                self.accel = accel
                return
            except _CannotStart:
                self.close()
                raise
            except EnvironmentProblem as problem:  # did not boot: the next accelerator may
                why = problem.message
                self.close()
            except BaseException:
                self.close()
                raise
        raise EnvironmentProblem(why)

    def _start(self, accel: str) -> None:
        clear_stale_shares()
        share = tempfile.TemporaryDirectory(prefix=f"{SHARE_PREFIX}{os.getpid()}-")
        self._share = share
        folder = Path(share.name)
        for name in ("out", "err"):
            (folder / name).touch()
        (folder / "boot.sh").write_text(_boot_script(self.guest, folder))
        disk = _data_disk(folder, self.guest.disk, self.guest.label) if self.guest.disk is not None else None
        argv = [
            vng_path(), "--run", str(self.guest.image), "--verbose", "-m", f"{max(1, self.guest.memory >> 20)}M",
            "-p", str(self.guest.cpus), "--rwdir", str(folder), *(["--disable-kvm"] if accel == "tcg" else []), *FAST_BOOT,
            *(["--append", self.guest.cmdline] if self.guest.cmdline else []), *_balloon_options(self.guest.balloon, folder),
            *(["--disk", str(disk)] if disk else []),
            "--exec", f"sh {folder}/boot.sh",
        ]  # fmt: skip
        self._console = (folder / "console").open("w+b")
        requests_read, requests = os.pipe()
        answers, answers_write = os.pipe()
        result_read, result_write = os.pipe()
        self._result = result_read  # vng's own account, of no use (the guest's launcher measures the runs): kept unread
        # vng finds its helpers (virtme-run) on PATH, beside it in benchlab's environment
        env = {**os.environ, "PATH": f"{Path(argv[0]).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        try:
            self._vng = start_launcher(
                ["--result-fd", str(result_write), "--", *argv], env=env, stdin=requests_read,
                stdout=answers_write, stderr=self._console, pass_fds=(result_write,),
            )  # fmt: skip
        finally:
            for fd in (requests_read, answers_write, result_write):
                os.close(fd)
        self._serving = Serving(self._vng, requests, answers, (folder / "out").open("rb"), (folder / "err").open("rb"))
        deadline = self.guest.kvm_boot_timeout if accel == "kvm" else TCG_BOOT_TIMEOUT_S
        line = self._serving.ask(b"", deadline)
        if line is None or line.get("protocol") != GUEST_PROTOCOL:
            raise self._not_booted(accel, deadline)
        if "failed" in line:  # the variant asks for what its kernel lacks: bad input, as for a missing module
            raise SpecError(self._refusal(line))
        fp = parse_remote_fingerprint(base64.b64decode(line["fingerprint"]).decode(errors="replace"))
        # the guest's whole command line names this boot's shared folder: only the variant's part identifies it
        self.fingerprint = {
            **fp, **self.guest.facts, "kernel_cmdline": self.guest.cmdline, "accel": accel, "emulated": accel == "tcg",
            "remote": False, "virtualization": f"qemu ({accel})",  # what the guest's shared root says is the host's
        }  # fmt: skip
        balloon = self.guest.balloon
        if balloon is not None and balloon.target is not None:
            _shrink(folder / "qmp", balloon.target, self.guest.label)

    def _not_booted(self, accel: str, deadline: float) -> EnvironmentProblem:
        """Why no boot line came; vng's refusal to start a guest worded with its fix. Its output
        ends only when vng (qemu, which it becomes) has exited: what it said is on the console."""
        assert self._serving is not None
        ended = self._serving.silence == "ended"
        said = self.console_tail() or "no console output"
        if ended and any(words in said for words in NO_STATIC_BUSYBOX):
            return _CannotStart(
                f"{self.guest.label}: virtme-ng cannot make a guest's initramfs without a statically linked busybox",
                hint="install it: `apt-get install busybox-static`",
            )
        how = {"ended": "ended before it booted", "late": f"did not boot within {deadline:.0f} s"}.get(
            self._serving.silence, "sent no boot line"
        )
        return EnvironmentProblem(f"{self.guest.label}: the guest {how} under {accel}: {said}")

    def _refusal(self, line: dict[str, Any]) -> str:
        kind, index = line.get("failed"), int(line.get("index", 0))
        release = self.guest.release
        if kind == "module":
            return f"{self.guest.label}: the guest kernel {release} cannot load module {self.guest.modules[index]}"
        if kind == "disk":
            return f"{self.guest.label}: the guest kernel {release} cannot mount its data disk (ext4 on virtio-blk)"
        if kind == "swap":
            return f"{self.guest.label}: the guest kernel {release} cannot swap on {self.guest.swap[index]}"
        path, value = self.guest.knobs[index]
        if kind == "knob_missing":
            return f"{self.guest.label}: the guest kernel {release} has no {path}"
        return f"{self.guest.label}: the guest kernel {release} refused {value!r} for {path}"

    def console_end(self) -> int:
        """Where the console ends now: what it prints from here on is the next run's."""
        return self._console.seek(0, os.SEEK_END) if self._console is not None else 0

    def console_tail(self, since: int = 0) -> str:
        """The console's last lines (after `since`), led by the kernel's panic or oops line where
        it printed one; empty where it printed nothing."""
        if self._console is None:
            return ""
        size = self._console.seek(0, os.SEEK_END)
        self._console.seek(max(since, size - CONSOLE_TAIL_BYTES * 8))
        lines = self._console.read().decode(errors="replace").strip().splitlines()
        cause = [line for line in lines if any(word in line for word in PANIC_WORDS)][-1:]
        return " | ".join(cause + lines[-3:])[-CONSOLE_TAIL_BYTES:]

    def shared_folder(self) -> Path:
        """A folder this side and the guest both write (at the same path): a profiled run's perf
        data is written there by the guest's perf and folded there by it too (its own kernel's
        symbols), and read back here. Boots the guest where none is up."""
        if self._serving is None:
            self._boot()
        assert self._share is not None
        return Path(self._share.name)

    def run(self, launch: Launch) -> Finished:
        request = request_line(launch)
        if request is None:
            raise WorkloadFailed("a command line or environment that is no UTF-8 cannot be sent to a guest")
        if self._serving is None:
            self._boot()
        serving = self._serving
        assert serving is not None
        since = self.console_end()
        try:
            finished = serving.run(request, launch, None)
        except WorkloadFailed as failed:
            if not serving.stopped:
                raise
            self._stopped_answering(launch, since, failed.stderr_tail)
        except BaseException:
            self.close()
            raise
        if self.guest.fresh:
            self.close()
        return finished

    def _stopped_answering(self, launch: Launch, since: int, stderr: str) -> NoReturn:
        """The guest hung or died in a run (`ask` waits no longer than the run's timeout plus
        ANSWER_GRACE_S): the run fails with the guest's own lines from that run, never the boot's
        (its console since the run was sent, the panic line first, and the run's stderr), and the
        next run boots a new guest."""
        how = {
            "ended": "it ended during the run",
            "late": f"no answer within the run's timeout of {launch.timeout:g} s + {ANSWER_GRACE_S:g} s",
        }.get(self._serving.silence if self._serving else "", "its answer was garbled")
        console = self.console_tail(since) or "nothing"
        said = " | ".join(stderr.strip().splitlines()[-3:])[-STDERR_QUOTE_CHARS:] or "nothing"
        self.close()
        raise WorkloadFailed(
            f"the guest ({self.guest.label}) stopped answering: {how}; its console during the run: {console}; "
            f"the run's stderr: {said}",
            stderr_tail=stderr,
        )

    def close(self) -> None:
        serving, self._serving = self._serving, None
        if serving is not None:
            serving.stop()
            serving.close_files()
        vng, self._vng = self._vng, None
        if vng is not None and vng.poll() is None:
            stop_tree(vng)
        if self._console is not None:
            with contextlib.suppress(OSError):
                self._console.close()
            self._console = None
        result, self._result = self._result, None
        if result is not None:
            os.close(result)
        share, self._share = self._share, None
        if share is not None:
            share.cleanup()
