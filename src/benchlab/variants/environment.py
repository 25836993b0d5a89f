"""The `environment` field: where a variant's runs happen.

- `local`: this system, as it is.
- `container`: the launcher enters new mount, PID, network and UTS namespaces and
  chroots into a Debian root filesystem (`benchlab container build` makes one with
  mmdebstrap), optionally under cgroup CPU and memory limits. The workload uses the
  container's own libraries (its allocators included); benchlab's probe, its shim and
  the workload's folder are bound in read-only at the same paths.
- `ssh`: another host (see `measure/remote.py`).
- `vm`: a virtual machine booting a kernel of the variant's choice (`variants/kernels.py`), with
  this system's files read-only as its root (see `measure/guest.py`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchlab.errors import EnvironmentProblem, SpecError
from benchlab.measure import programs
from benchlab.measure.cgroup import run_cgroup_parent
from benchlab.measure.guest import BALLOON_DRIVER, Balloon, Guest, vng_path
from benchlab.measure.process import ContainerLaunch
from benchlab.spec.models import DEFAULT_VM_CPUS, DEFAULT_VM_MEMORY, EnvironmentSpec
from benchlab.variants import kernels
from benchlab.variants.knobs import knob_spelling_problem, state_dir

# what `benchlab container build` installs beyond Debian's minimal base: the allocators
ROOTFS_PACKAGES = ("libjemalloc2", "libtcmalloc-minimal4", "libmimalloc2.0")
BUILD_HINT = "benchlab container build"


def default_rootfs() -> Path:
    return state_dir() / "rootfs" / "bookworm"


def _inside(rootfs: str, path: str) -> str:
    return os.path.join(rootfs, path.lstrip("/"))


@dataclass(frozen=True)
class PreparedEnvironment:
    spec: EnvironmentSpec
    rootfs: str | None = None
    shim: str | None = None
    guest: Guest | None = None

    @classmethod
    def prepare(cls, spec: EnvironmentSpec, shim: str | None, allocator: list[str], where: str) -> PreparedEnvironment:
        """`shim` is bound in from here; the `allocator` libraries must be the container's own."""
        if spec.kind == "vm":
            return cls(spec, guest=prepare_guest(spec, where))
        if spec.kind != "container":
            return cls(spec)
        rootfs = os.path.abspath(os.path.expanduser(spec.rootfs)) if spec.rootfs else str(default_rootfs())
        if not os.path.exists(_inside(rootfs, "bin/sh")):
            raise EnvironmentProblem(f"{where}: no container root filesystem at {rootfs}", hint=BUILD_HINT)
        if os.geteuid() != 0:
            raise EnvironmentProblem(f"{where}: a container environment needs root (namespaces, chroot)")
        if (spec.cpus or spec.memory) and run_cgroup_parent()[0] is None:
            raise EnvironmentProblem(f"{where}: the container's limits need a cgroup: {run_cgroup_parent()[1]}")
        for library in allocator:
            if not os.path.exists(_inside(rootfs, os.path.realpath(library))):
                raise SpecError(
                    f"the container's root filesystem {rootfs} has no {library}", where=where,
                    hint=f"{BUILD_HINT} installs {', '.join(ROOTFS_PACKAGES)}",
                )  # fmt: skip
        return cls(spec, rootfs, shim)

    def container(self, argv: tuple[str, ...], cwd: str | None, writes: Sequence[str] = ()) -> ContainerLaunch | None:
        """The container a run enters, binding in what it needs from the host: the program
        when the root filesystem lacks it (the probe, a benchmark binary), the shim, the folder,
        and the folders it writes to for benchlab (`writes`: the shim's report)."""
        if self.rootfs is None:
            return None
        wanted = [p for p in (argv[0], self.shim) if p and os.path.isabs(p)]
        binds = {os.path.dirname(p) for p in wanted if not os.path.exists(_inside(self.rootfs, p))}
        if cwd:
            binds.add(os.path.abspath(cwd))
        binds.update(writes)
        return ContainerLaunch(rootfs=self.rootfs, binds=tuple(sorted(binds)), memory_limit=self.spec.memory, cpus=self.spec.cpus)


def prepare_guest(spec: EnvironmentSpec, where: str, optional_modules: tuple[str, ...] = ()) -> Guest:
    """Everything a vm variant boots, checked before any run: the kernel (fetched with apt on
    first use), its modules, the knobs' paths, the memory this machine can give, the tools.
    `optional_modules` are loaded too where the kernel ships them (binder for `benchlab ipc`)."""
    needs = [*programs.VM_PROGRAMS]
    if spec.disk is not None:
        needs.append(programs.Program("vm", "mkfs.ext4", "e2fsprogs", "makes the data disk"))
    for program in needs:
        why = programs.missing(program)
        if why is not None:
            needed = f"{where}: a vm needs {program.name} ({program.why}): {why}"
            raise EnvironmentProblem(needed, hint=f"apt-get install {program.package}")
    vng_path()
    kernel = kernels.resolve(spec.kernel, f"{where}.kernel")
    for module in spec.modules:
        if not kernel.has_module(module):
            raise SpecError(f"the guest kernel {kernel.release} has no module {module}", where=f"{where}.modules")
    balloon = spec.balloon
    if balloon and not kernel.has_module(BALLOON_DRIVER):
        raise SpecError(f"the guest kernel {kernel.release} has no virtio balloon driver", where=f"{where}.balloon")
    if balloon and balloon.reporting and kernel.config and kernel.config.get("CONFIG_PAGE_REPORTING") != "y":
        raise SpecError(f"the guest kernel {kernel.release} cannot report free pages", where=f"{where}.balloon")
    for path in spec.knobs:  # the guest's files: spelled as a knob; whether it exists, the guest says at boot
        problem = knob_spelling_problem(path)
        if problem is not None:
            raise SpecError(f"'{path}': {problem}", where=f"{where}.knobs")
    memory = spec.memory or DEFAULT_VM_MEMORY
    available = _available_memory()
    if available is not None and memory > available:
        raise EnvironmentProblem(
            f"{where}: the guest's {memory >> 20} MiB exceed the {available >> 20} MiB this machine has available"
        )
    return Guest(
        label=f"vm {kernel.release}", image=kernel.image, release=kernel.release, memory=memory,
        cpus=int(spec.cpus or DEFAULT_VM_CPUS), accel=spec.accel,
        modules=(
            *([BALLOON_DRIVER] if balloon and BALLOON_DRIVER not in spec.modules else []), *spec.modules,
            *(m for m in optional_modules if m not in spec.modules and kernel.has_module(m)),
        ),
        knobs=tuple(spec.knobs.items()), swap=tuple(spec.swap), disk=spec.disk, cmdline=spec.cmdline, fresh=spec.fresh,
        kvm_boot_timeout=spec.kvm_boot_timeout,
        balloon=Balloon(balloon.reporting, balloon.target) if balloon else None,
        facts={"guest_kernel": kernel.source, "kernel_switches": kernel.switches()},
    )  # fmt: skip


def _available_memory() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


# a suite, a package or a mirror URL as mmdebstrap takes them: words, never an option or a list
_ARGUMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+~:/_@%=-]*")


def build_rootfs(path: Path | None, *, suite: str, mirror: str, extra: list[str], say: Callable[[str], None]) -> Path:
    """A minimal Debian (mmdebstrap's `minbase`) with the allocators, built beside and then
    moved into place, so that a failed build never leaves a half root filesystem behind."""
    mmdebstrap = shutil.which("mmdebstrap")
    if mmdebstrap is None:
        raise EnvironmentProblem("mmdebstrap is not installed", hint="apt-get install mmdebstrap")
    for value, flag in ((suite, "--suite"), (mirror, "--mirror"), *((p, "--package") for p in extra)):
        if not _ARGUMENT.fullmatch(value):  # each becomes one of mmdebstrap's arguments, never an option
            raise SpecError(f"{value[:60]!r} is not a Debian name or URL (no leading '-', no ',' or ';')", where=flag)
    target = (path or default_rootfs()).resolve()
    if target.exists() and not target.is_dir():
        raise SpecError(f"{target} is not a folder", where="--path")
    if target.exists() and any(target.iterdir()):
        raise SpecError(f"{target} exists and is not empty; remove it first or choose another --path")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(target.name + ".building")
    shutil.rmtree(staging, ignore_errors=True)
    packages = ",".join([*ROOTFS_PACKAGES, *extra])
    say(f"building a Debian {suite} root filesystem with {packages} in {target} (mmdebstrap, about a minute)")
    argv = [mmdebstrap, "--variant=minbase", f"--include={packages}", "--quiet", suite, str(staging), mirror]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise EnvironmentProblem(f"mmdebstrap failed: {tail}")
    if target.exists():
        target.rmdir()
    staging.rename(target)
    return target
