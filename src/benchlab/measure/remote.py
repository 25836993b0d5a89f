"""Running runs on another host over ssh (`environment = "ssh://user@host"`).

On first use benchlab copies its native parts (the launcher, the probe, the shim) to
`~/.cache/benchlab/DIGEST/` on the host, once per build, and reads the host's
fingerprint there. Each run is then one ssh command: the remote launcher times the
workload on the host exactly as it does here, and everything the run left there comes
back as one JSON document on stdout (`RemoteReply`: the launcher's account, the
workload's stdout and stderr, the shim's report, each base64 in a versioned object),
so nothing is read out of text; the run is stored here under the remote host. Only the variant's own
environment (its `env`, tunables, shim settings and preloads) is sent; the rest is the
host's. `timeout -s KILL` on the host ends a run that overstays, whole process group
included, even if the connection drops.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from benchlab.errors import EnvironmentProblem, WorkloadFailed
from benchlab.locate import SHIM_REPORT, launcher_path, probe_path, shim_path
from benchlab.measure.host import REMOTE_FINGERPRINT, parse_remote_fingerprint
from benchlab.measure.process import Finished, Launch, finished_from_account
from benchlab.spec.models import EnvironmentSpec

REMOTE_PROTOCOL = 1


class RemoteReply(BaseModel):
    """What one remote run sends back, the files' contents base64 (empty: nothing written)."""

    protocol: int
    exit: int  # the shell's status of the launcher (137: `timeout` killed it)
    account: str  # the launcher's JSON account
    stdout: str
    stderr: str
    shim: str  # the shim's report (JSON lines), where the run had one

    def data(self, field: str) -> bytes:
        return base64.b64decode(getattr(self, field), validate=True)


CONNECT_TIMEOUT_S = 15
# a memory cgroup parent on the host for the tree's peak, where it is root with cgroup v1 or v2: in the
# folder of the login's PID namespace, as here (measure/cgroup.py: `benchlab/pidns-INODE`)
REMOTE_CGROUP = (
    "ns=pidns-$(stat -L -c %i /proc/self/ns/pid) && "
    "if [ -w /sys/fs/cgroup/memory ]; then d=/sys/fs/cgroup/memory/benchlab/$ns && mkdir -p $d && echo $d; "
    "elif grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null && [ -w /sys/fs/cgroup ]; then "
    "d=/sys/fs/cgroup/benchlab && mkdir -p $d/$ns && echo +memory > /sys/fs/cgroup/cgroup.subtree_control && "
    "echo +memory > $d/cgroup.subtree_control && echo +memory > $d/$ns/cgroup.subtree_control && echo $d/$ns; fi"
)


FILES = (("stdout", "o"), ("stderr", "e"), ("shim", "s"))  # reply field, shell variable of its file
SHIM_WORD, SHIM_VALUE = shlex.quote(f'{SHIM_REPORT}="$s"'), f'{SHIM_REPORT}="$s"'  # "$s" expands on the host


@functools.cache
def _natives() -> dict[str, str]:
    """Name on the host -> path here. The shim keeps its file name, so that the check of what a
    run mapped can match preloads by name."""
    return {"benchlab-launch": launcher_path(), "benchlab-probe": probe_path(), os.path.basename(shim_path()): shim_path()}


@functools.cache
def _digest() -> str:
    h = hashlib.sha256()
    for path in _natives().values():
        h.update(Path(path).read_bytes())
    return h.hexdigest()[:16]


class RemoteExecutor:
    """Runs launches on one ssh host; made ready (copy, fingerprint) on first use."""

    def __init__(self, spec: EnvironmentSpec) -> None:
        self.spec = spec
        self.folder: str | None = None
        self.cgroup: str | None = None
        self.fingerprint: dict[str, Any] = {}

    def _ssh(self) -> list[str]:
        port = ["-p", str(self.spec.port)] if self.spec.port else []
        options = ["-o", "BatchMode=yes", "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}"]
        return ["ssh", *self.spec.ssh_options, *options, *port, str(self.spec.host)]  # ssh keeps an option's first value

    def _shell(self, command: str, *, stdin: bytes | None = None, timeout: float = 120) -> str:
        try:
            proc = subprocess.run([*self._ssh(), command], input=stdin, capture_output=True, timeout=timeout)
        except FileNotFoundError:
            raise EnvironmentProblem("ssh is not installed", hint="apt-get install openssh-client") from None
        except subprocess.TimeoutExpired:
            raise EnvironmentProblem(f"{self.spec.label}: no answer within {timeout:.0f} s") from None
        if proc.returncode != 0:
            why = (proc.stderr.decode(errors="replace").strip().splitlines() or [f"exit {proc.returncode}"])[-1]
            raise EnvironmentProblem(f"{self.spec.label}: {why}", hint="check that `ssh` reaches it without a password")
        return proc.stdout.decode(errors="replace")

    def prepare(self) -> dict[str, Any]:
        """Copies the native parts over (once per build) and returns the host's fingerprint."""
        if self.folder is not None:
            return self.fingerprint
        arch = self._shell("uname -m").strip()
        if arch != os.uname().machine:
            raise EnvironmentProblem(
                f"{self.spec.label} is {arch}, this machine {os.uname().machine}: the probe cannot run there"
            )
        folder = f".cache/benchlab/{_digest()}"
        for name, local in _natives().items():
            target = f"{folder}/{name}"
            part = f"{target}.part"
            check = f"test -x {target} || (mkdir -p {folder} && cat > {part} && chmod +x {part} && mv {part} {target})"
            self._shell(check, stdin=Path(local).read_bytes())
        self.folder = self._shell(f"cd {folder} && pwd").strip()
        self.cgroup = self._shell(REMOTE_CGROUP).strip() or None
        self.fingerprint = parse_remote_fingerprint(self._shell(REMOTE_FINGERPRINT))
        return self.fingerprint

    def _translate(self, text: str) -> str:
        """Local paths of benchlab's native parts -> their copies on the host."""
        for name, local in _natives().items():
            text = text.replace(local, f"{self.folder}/{name}")
        return text

    def command(self, launch: Launch) -> str:
        """The remote shell command of one run."""
        flags = ["--mapped", *(["--perf-counters"] if launch.perf_counters else [])]
        if self.cgroup:
            flags += ["--cgroup", self.cgroup]
        if launch.memory_interval:
            flags += ["--memory-interval-ms", str(max(1, round(launch.memory_interval * 1000)))]
        env = [f"{k}={self._translate(v)}" for k, v in launch.env.items() if k != SHIM_REPORT]
        argv = [self._translate(a) for a in launch.argv]
        cpus = ["taskset", "-c", ",".join(map(str, sorted(launch.cpus)))] if launch.cpus is not None else []
        run = [
            "env", *env, "timeout", "-s", "KILL", f"{launch.timeout:.0f}", *cpus,
            f"{self.folder}/benchlab-launch", "--result-fd", "3", *flags, "--", *argv,
        ]  # fmt: skip
        if SHIM_REPORT in launch.env:  # the shim reports to a file of the host's, sent back below
            run[1:1] = [f'{SHIM_REPORT}="$s"']
        cd = f"cd {shlex.quote(launch.cwd)} && " if launch.cwd else ""
        fields = "".join(f'printf \'","{name}":"\'; base64 -w0 <"${var}"; ' for name, var in FILES)
        return (
            f"r=$(mktemp) && o=$(mktemp) && e=$(mktemp) && s=$(mktemp) && ({cd}{shlex.join(run).replace(SHIM_WORD, SHIM_VALUE)} "
            f'3>"$r" >"$o" 2>"$e" </dev/null); code=$?; '
            f'printf \'{{"protocol":{REMOTE_PROTOCOL},"exit":%d,"account":"\' $code; base64 -w0 <"$r"; {fields}'
            f'printf \'"}}\\n\'; rm -f "$r" "$o" "$e" "$s"; exit $code'
        )

    def run(self, launch: Launch) -> Finished:
        self.prepare()
        try:
            proc = subprocess.run(
                [*self._ssh(), self.command(launch)], capture_output=True, stdin=subprocess.DEVNULL, timeout=launch.timeout + 60
            )
        except subprocess.TimeoutExpired:
            raise WorkloadFailed(f"{self.spec.label} did not answer within the run's timeout", status="timeout") from None
        reply = self._reply(proc)
        account_text = reply.data("account")
        account = json.loads(account_text) if account_text.strip() else None
        timed_out = account is None and reply.exit == 137  # timeout's SIGKILL took the launcher
        if SHIM_REPORT in launch.env:  # the shim's findings, where benchlab reads them for a local run
            Path(launch.env[SHIM_REPORT]).write_bytes(reply.data("shim"))
        note = None if self.cgroup else f"tree peak memory not measured on {self.spec.label}: no writable memory cgroup there"
        return finished_from_account(account, launch, timed_out, reply.data("stdout"), reply.data("stderr"), note)

    def _reply(self, proc: subprocess.CompletedProcess[bytes]) -> RemoteReply:
        """The run's one JSON document; without one the connection failed (ssh's own words)."""
        try:
            fields = json.loads(proc.stdout)
        except ValueError:
            said = proc.stderr.decode(errors="replace").strip()[-300:] or f"ssh exit {proc.returncode}"
            raise WorkloadFailed(f"{self.spec.label}: the connection failed ({said})") from None
        version = fields.get("protocol") if isinstance(fields, dict) else None
        if version != REMOTE_PROTOCOL:
            raise EnvironmentProblem(
                f"{self.spec.label} answered in remote protocol {version}, this benchlab reads {REMOTE_PROTOCOL}"
            )
        try:
            reply = RemoteReply.model_validate(fields)
            for name in ("account", "stdout", "stderr", "shim"):
                reply.data(name)
        except (ValidationError, binascii.Error) as exc:
            raise WorkloadFailed(f"{self.spec.label} sent a malformed reply: {exc}") from None
        return reply
