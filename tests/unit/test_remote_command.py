"""What benchlab sends to a remote host, without a host: the remote command of one run
and the fingerprint a POSIX shell reads there."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from benchlab.errors import EnvironmentProblem
from benchlab.locate import SHIM_REPORT, probe_path, shim_path
from benchlab.measure.host import REMOTE_FINGERPRINT, parse_remote_fingerprint
from benchlab.measure.process import Launch
from benchlab.measure.remote import REMOTE_PROTOCOL, RemoteExecutor
from benchlab.spec.models import EnvironmentSpec
from benchlab.variants.shim import shim_events


def test_the_remote_command_uses_the_copies_there_and_sends_only_the_variants_environment() -> None:
    remote = RemoteExecutor(EnvironmentSpec.model_validate("ssh://lab"))
    remote.folder, remote.cgroup = "/home/u/.cache/benchlab/abc", "/sys/fs/cgroup/memory/benchlab"
    launch = Launch(
        argv=(probe_path(), "alloc.churn", "--label", "it's"), env={"LD_PRELOAD": shim_path(), "MALLOC_CONF": "narenas:2"},
        cwd="/srv/work dir", cpus=frozenset({0, 1}), timeout=30, memory_interval=0.05,
    )  # fmt: skip
    command = remote.command(launch)
    inner = command.split(" && (", 1)[1].split(" 3>")[0]  # (cd FOLDER && env ... launcher -- argv 3>...)
    words = shlex.split(inner.split("&& ", 1)[1])
    assert words[:3] == [
        "env",
        f"LD_PRELOAD=/home/u/.cache/benchlab/abc/{shim_path().rsplit('/', 1)[1]}",
        "MALLOC_CONF=narenas:2",
    ]
    assert words[3:9] == ["timeout", "-s", "KILL", "30", "taskset", "-c"] and words[9] == "0,1"
    assert words[10] == "/home/u/.cache/benchlab/abc/benchlab-launch"
    assert "--cgroup" in words and "--memory-interval-ms" in words and words[words.index("--memory-interval-ms") + 1] == "50"
    assert words[words.index("--") + 1 :] == ["/home/u/.cache/benchlab/abc/benchlab-probe", "alloc.churn", "--label", "it's"]
    assert "cd '/srv/work dir' && " in command and f'{{"protocol":{REMOTE_PROTOCOL},' in command


def test_the_fingerprint_script_runs_in_a_plain_shell_and_parses() -> None:
    out = subprocess.run(["sh", "-c", REMOTE_FINGERPRINT], capture_output=True, text=True, check=True).stdout
    fp = parse_remote_fingerprint(out)
    assert fp["remote"] is True and fp["arch"] and isinstance(fp["cpus_online"], int) and fp["cpus_online"] >= 1
    assert isinstance(fp["memory_kib"], int) and fp["kernel"]


# stands in for benchlab-launch on the host: writes its account on fd 3, the workload's words, a shim finding
FAKE_LAUNCHER = """#!/bin/sh
printf '{"exit_code": 0, "wall_ns": 5}' >&3
printf 'out \\000 put'; echo 'any words at all' >&2
echo '{"protocol": 1, "event": "use_after_free_write", "pid": 7}' >> "$BENCHLAB_SHIM_REPORT"
"""


def test_the_remote_side_answers_with_one_json_document_whatever_the_run_printed(tmp_path: Path) -> None:
    remote = RemoteExecutor(EnvironmentSpec.model_validate("ssh://lab"))
    remote.folder, remote.cgroup = str(tmp_path), "/sys/fs/cgroup/benchlab"
    (tmp_path / "benchlab-launch").write_text(FAKE_LAUNCHER)
    (tmp_path / "benchlab-launch").chmod(0o755)
    report = tmp_path / "here" / "report.jsonl"
    report.parent.mkdir()
    launch = Launch(argv=("/bin/true",), env={SHIM_REPORT: str(report)}, cwd=None, cpus=None, timeout=30)
    proc = subprocess.run(["sh", "-c", remote.command(launch)], capture_output=True, check=True)
    reply = remote._reply(proc)
    assert json.loads(reply.data("account")) == {"exit_code": 0, "wall_ns": 5}
    assert reply.data("stdout") == b"out \0 put" and reply.data("stderr") == b"any words at all\n" and reply.exit == 0
    assert [e["pid"] for e in (json.loads(line) for line in reply.data("shim").splitlines())] == [7]
    proc.stdout = proc.stdout.replace(b'"protocol":1', b'"protocol":2')
    with pytest.raises(EnvironmentProblem, match="remote protocol 2, this benchlab reads 1"):
        remote._reply(proc)


def test_the_shims_report_is_json_lines_of_one_protocol(tmp_path: Path) -> None:
    report = tmp_path / "run" / "report.jsonl"
    report.parent.mkdir()
    report.write_text('{"protocol": 1, "event": "stats", "pid": 3}\n')
    assert shim_events(str(report)) == [{"protocol": 1, "event": "stats", "pid": 3}]
    assert not report.parent.exists()  # read once: the folder goes with it
    report.parent.mkdir()
    report.write_text('{"protocol": 9, "event": "stats"}\n')
    with pytest.raises(EnvironmentProblem, match="report protocol 9, this benchlab reads 1"):
        shim_events(str(report))
