"""The quick look at IPC (`benchlab ipc`): the probe's IPC workloads run
directly, one probe process per mechanism, and binder's absence explained.

Experiments use the same workloads (`ipc.<mechanism>.throughput|latency`)
through the runner; this module is only the direct path, so it does no
statistics: it returns the probe's own documents.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchlab.errors import EnvironmentProblem, SpecError, WorkloadFailed
from benchlab.locate import probe_path
from benchlab.measure.guest import GuestExecutor
from benchlab.measure.process import Launch
from benchlab.spec.models import EnvironmentSpec
from benchlab.variants.environment import prepare_guest
from benchlab.workloads.probe import ProbeSaid, catalogue, check_options, option_value, probe_said

MECHANISMS = ("pipe", "unix", "seqpacket", "eventfd", "futex", "binder")
BINDER_DEVICES = ("binderfs/binder", "binder")  # under /dev, in the order the probe looks


def binder_status(dev: Path = Path("/dev"), filesystems: Path = Path("/proc/filesystems")) -> str | None:
    """None where a binder device is there to measure; otherwise why binder is skipped."""
    if any((dev / name).exists() for name in BINDER_DEVICES):
        return None
    try:
        binderfs = any(line.split()[-1] == "binder" for line in filesystems.read_text().splitlines() if line.strip())
    except OSError:
        binderfs = False
    if binderfs:
        return (
            f"binder skipped: the kernel has binderfs but no device is mounted; as root: "
            f"mkdir -p {dev}/binderfs && mount -t binder binder {dev}/binderfs"
        )
    return (
        f"binder skipped: this kernel offers no binder device ({dev}/binder, {dev}/binderfs/binder) and no binderfs "
        "(load binder_linux where the kernel was built with CONFIG_ANDROID_BINDER_IPC)"
    )


def mechanisms(chosen: list[str], binder_missing: str | None) -> list[str]:
    """The mechanisms asked for, in the catalogue's order (`all` or nothing: every one this kernel has)."""
    unknown = [m for m in chosen if m not in (*MECHANISMS, "all")]
    if unknown:
        raise SpecError(f"no IPC mechanism '{unknown[0]}' (there are: {', '.join(MECHANISMS)}, all)")
    wanted = [m for m in MECHANISMS if not chosen or "all" in chosen or m in chosen]
    runnable = [m for m in wanted if not (m == "binder" and binder_missing)]
    if not runnable:
        raise EnvironmentProblem(binder_missing or "no IPC mechanism to run")
    return runnable


@dataclass
class ProbeOutput:
    document: dict[str, Any]
    said: ProbeSaid  # the notes and the inheritance result, from the document's protocol fields
    stderr: str  # for people only (the verbose lines): shown as it is, never read


BINDER_MODULE = "binder_linux"
PROBE_OUTPUT_LIMIT = 64 << 20  # a document of 64 MiB is far beyond any the probe writes


def guest(environment: EnvironmentSpec, where: str) -> tuple[GuestExecutor, str | None]:
    """A guest to run the probe in (not yet booted), with binder's module loaded where its kernel
    ships it, and why binder is skipped there if it cannot run."""
    prepared = prepare_guest(environment, where, optional_modules=(BINDER_MODULE,))
    missing = None
    if prepared.facts["kernel_switches"]["binder"] not in ("y", "m"):
        missing = f"binder skipped: the guest kernel {prepared.release} was built without binder (CONFIG_ANDROID_BINDER_IPC)"
    return GuestExecutor(prepared), missing


def run_probe(workload: str, options: Mapping[str, object], fmt: str, executor: GuestExecutor | None = None) -> ProbeOutput:
    """One direct probe run in a JSON format (`json` or `android`), here or in a guest. Its
    options are checked first, as a spec's would be (the declared kinds and bounds, then
    `--check` for what needs this machine: pairs beyond its CPUs), so a bad value is bad input
    (exit 2) naming the flag; a failure of the run itself is one line with the probe's last words."""
    declared = {o["name"]: o for o in catalogue()[workload]["options"]}
    argv = [probe_path(), workload]
    for key, value in options.items():
        argv.append(f"--{key}={option_value(declared[key], value, f'--{key}')}")  # `=`: a value may start with '-'
    refused = check_options(argv, workload)
    if refused is not None:
        raise SpecError(refused)
    argv += ["--format", fmt]
    if executor is None:
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        code, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    else:
        launch = Launch(argv=tuple(argv), env=dict(os.environ), stdout_limit=PROBE_OUTPUT_LIMIT)
        finished = executor.run(launch)
        if finished.exit_code is None:  # killed or past its timeout
            raise finished.failure()
        code, stdout = finished.exit_code, finished.stdout.decode(errors="replace")
        stderr = finished.stderr.decode(errors="replace")
    if code != 0:
        last = (stderr.strip().splitlines() or [""])[-1]
        raise WorkloadFailed(f"{workload} failed (exit {code})" + (f": {last}" if last else ""))
    try:
        document = json.loads(stdout)
    except json.JSONDecodeError as exc:
        raise WorkloadFailed(f"{workload} printed no JSON: {exc}") from None
    fields = document.get("benchlab") if fmt == "android" else document.get("context", {}).get("benchlab")
    return ProbeOutput(document, probe_said(fields, workload), stderr)
