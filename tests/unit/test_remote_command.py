"""What benchlab sends to a remote host, without a host: the remote command of one run
and the fingerprint a POSIX shell reads there."""

from __future__ import annotations

import shlex
import subprocess

from benchlab.locate import probe_path, shim_path
from benchlab.measure.host import REMOTE_FINGERPRINT, parse_remote_fingerprint
from benchlab.measure.process import Launch
from benchlab.measure.remote import MARKER, RemoteExecutor
from benchlab.spec.models import EnvironmentSpec


def test_the_remote_command_uses_the_copies_there_and_sends_only_the_variants_environment() -> None:
    remote = RemoteExecutor(EnvironmentSpec.model_validate("ssh://lab"))
    remote.folder, remote.cgroup = "/home/u/.cache/benchlab/abc", "/sys/fs/cgroup/memory/benchlab"
    launch = Launch(
        argv=(probe_path(), "alloc.churn", "--label", "it's"), env={"LD_PRELOAD": shim_path(), "MALLOC_CONF": "narenas:2"},
        cwd="/srv/work dir", cpus=frozenset({0, 1}), timeout=30, memory_interval=0.05,
    )  # fmt: skip
    command = remote.command(launch)
    words = shlex.split(command.split("&& ", 2)[2].split(" 3>")[0])
    assert words[:3] == [
        "env",
        f"LD_PRELOAD=/home/u/.cache/benchlab/abc/{shim_path().rsplit('/', 1)[1]}",
        "MALLOC_CONF=narenas:2",
    ]
    assert words[3:9] == ["timeout", "-s", "KILL", "30", "taskset", "-c"] and words[9] == "0,1"
    assert words[10] == "/home/u/.cache/benchlab/abc/benchlab-launch"
    assert "--cgroup" in words and "--memory-interval-ms" in words and words[words.index("--memory-interval-ms") + 1] == "50"
    assert words[words.index("--") + 1 :] == ["/home/u/.cache/benchlab/abc/benchlab-probe", "alloc.churn", "--label", "it's"]
    assert "cd '/srv/work dir' && " in command and MARKER in command


def test_the_fingerprint_script_runs_in_a_plain_shell_and_parses() -> None:
    out = subprocess.run(["sh", "-c", REMOTE_FINGERPRINT], capture_output=True, text=True, check=True).stdout
    fp = parse_remote_fingerprint(out)
    assert fp["remote"] is True and fp["arch"] and isinstance(fp["cpus_online"], int) and fp["cpus_online"] >= 1
    assert isinstance(fp["memory_kib"], int) and fp["kernel"]
