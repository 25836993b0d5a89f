"""The container environment against a real Debian root filesystem built by
`benchlab container build`: the run is PID 1 of its own namespaces inside the chroot,
uses the container's own libraries, and its cgroup limits are really in force."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchlab.errors import EnvironmentProblem
from benchlab.locate import probe_path
from benchlab.measure.process import LocalExecutor
from benchlab.runner import Prepared
from benchlab.spec.validate import spec_from_dict
from tests.conftest import cli


def prepared(rootfs: str, **environment: object) -> Prepared:
    spec = spec_from_dict(
        {
            "name": "c",
            "workloads": [{"name": "w", "command": ["true"]}],
            "variants": [{"name": "box", "environment": {"kind": "container", "rootfs": rootfs, **environment}}],
        }
    )
    return Prepared.from_spec(spec)


def run_inside(rootfs: str, argv: list[str], **environment: object):  # type: ignore[no-untyped-def]
    launch = prepared(rootfs, **environment).variants["box"].launch(argv, cwd=None, timeout=120)
    return LocalExecutor().run(launch)


def test_the_run_is_pid_1_of_its_own_namespaces_in_the_chroot(rootfs: str) -> None:
    finished = run_inside(rootfs, ["sh", "-c", "hostname; echo $$; cat /etc/debian_version; ls /tmp | wc -l; cat /proc/net/dev"])
    assert finished.ok, finished.stderr
    hostname, pid, debian, tmp, *net = finished.stdout.decode().splitlines()
    assert (hostname, pid, tmp) == ("benchlab-container", "1", "0")
    assert debian.startswith("12")  # the root filesystem's Debian, whatever this machine runs
    assert [line.split(":")[0].strip() for line in net[2:]] == ["lo"]  # no network but loopback


def test_limits_are_in_force_cpu_quota_seen_by_the_workload_and_memory_enforced(rootfs: str, tmp_path: Path) -> None:
    copy = tmp_path / "benchlab-probe"  # under /tmp, which the container mounts afresh: the bind must still show
    shutil.copy(probe_path(), copy)
    probe = [str(copy), "cpu.aes_xts", "--threads", "0", "--iterations", "1", "--format", "json"]
    limited = run_inside(rootfs, probe, cpus=1)
    assert limited.ok, limited.stderr
    assert json.loads(limited.stdout)["benchmarks"][0]["threads"] == 1  # available_parallelism reads the quota
    big = ["dd", "if=/dev/zero", "of=/dev/null", "bs=200M", "count=1"]
    assert run_inside(rootfs, big).ok
    starved = run_inside(rootfs, big, memory="64M")
    assert starved.signal == 9 and starved.usage.tree_peak_kib is not None and starved.usage.tree_peak_kib <= 64 << 10


def test_memory_samples_and_the_workloads_folder_work_inside(rootfs: str, tmp_path: Path) -> None:
    """The sampler thread is made after the launcher re-entered its own PID namespace (the kernel
    refuses a thread in a namespace made for children: EINVAL), and the run starts in its `cwd`."""
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "here.txt").write_text("inside\n")
    launch = (
        prepared(rootfs)
        .variants["box"]
        .launch(["sh", "-c", "sleep 0.2; pwd; cat here.txt"], cwd=str(folder), timeout=120, memory_interval=0.01)
    )
    finished = LocalExecutor().run(launch)
    assert finished.ok, finished.stderr
    assert finished.stdout.decode().split() == [str(folder), "inside"]
    assert finished.usage.memory["samples"] > 0 and finished.usage.memory["rss_peak_kib"] > 0


def test_a_container_variant_runs_the_containers_own_allocator(rootfs: str, tmp_path: Path) -> None:
    spec = tmp_path / "c.toml"
    spec.write_text(
        f"""name = "boxed"
blocks = 2
[[workloads]]
name = "churn"
builtin = "alloc.churn"
options = {{ threads = 1, ops = 100000 }}
[[variants]]
name = "native"
[[variants]]
name = "container-jemalloc"
allocator = "jemalloc"
shim = {{ sampling = 10 }}
environment = {{ kind = "container", rootfs = "{rootfs}" }}
"""
    )
    cli("run", str(spec), check=True)
    runs = json.loads(cli("report", "boxed", "--format", "json", check=True).stdout)["runs"]
    boxed = [r for r in runs if r["variant"] == "container-jemalloc"]
    assert [r["status"] for r in boxed] == ["ok", "ok"]
    assert {r["details"]["allocator"] for r in boxed} == {"jemalloc"}


def test_a_missing_root_filesystem_is_refused_with_the_command_that_builds_one(tmp_path: Path) -> None:
    with pytest.raises(EnvironmentProblem) as caught:
        prepared(str(tmp_path / "none"))
    assert "no container root filesystem" in str(caught.value) and "benchlab container build" in str(caught.value)
