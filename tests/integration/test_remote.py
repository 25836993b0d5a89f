"""The ssh environment against a real sshd on this machine, in its own network and UTS
namespaces (hostname `remote-lab`), reached over a veth pair as another host would be."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import cli

pytestmark = pytest.mark.serial  # network namespaces, a veth pair and an sshd

SSHD = "/usr/sbin/sshd"


def sh(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True)


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    if os.geteuid() != 0 or not os.path.exists(SSHD) or not shutil.which("ip") or not shutil.which("ssh"):
        pytest.skip("needs root, iproute2, openssh-server and openssh-client (the README's test command installs them)")
    folder = tmp_path_factory.mktemp("sshd")
    n = os.getpid() % 250
    netns, host_if, lab_if, address = f"blt{os.getpid()}", f"blh{n}", f"blc{n}", f"10.231.{n}.2"
    for key in ("client", "host"):
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / key))
    shutil.copy(folder / "client.pub", folder / "authorized_keys")
    (folder / "sshd_config").write_text(
        f"Port 2222\nListenAddress {address}\nHostKey {folder}/host\nAuthorizedKeysFile {folder}/authorized_keys\n"
        f"PidFile {folder}/sshd.pid\nUsePAM no\nStrictModes no\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n"
    )
    sh("ip", "netns", "add", netns)
    sshd = None
    try:
        sh("ip", "link", "add", host_if, "type", "veth", "peer", "name", lab_if)
        sh("ip", "link", "set", lab_if, "netns", netns)
        sh("ip", "addr", "add", f"10.231.{n}.1/30", "dev", host_if)
        sh("ip", "link", "set", host_if, "up")
        for command in (
            ["addr", "add", f"{address}/30", "dev", lab_if],
            ["link", "set", lab_if, "up"],
            ["link", "set", "lo", "up"],
        ):
            sh("ip", "netns", "exec", netns, "ip", *command)
        os.makedirs("/run/sshd", exist_ok=True)
        start = f"hostname remote-lab && exec {SSHD} -D -f {folder}/sshd_config -E {folder}/log"
        sshd = subprocess.Popen(["ip", "netns", "exec", netns, "unshare", "--uts", "sh", "-c", start])
        options = ["-i", str(folder / "client"), "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                   "-o", "LogLevel=ERROR"]  # fmt: skip
        probe = ["ssh", "-o", "BatchMode=yes", "-p", "2222", *options, f"root@{address}", "hostname"]
        for _ in range(50):
            if subprocess.run(probe, capture_output=True, text=True).stdout.strip() == "remote-lab":
                break
            time.sleep(0.1)
        else:
            pytest.fail(f"sshd did not come up: {(folder / 'log').read_text() if (folder / 'log').exists() else ''}")
        yield {"kind": "ssh", "host": f"root@{address}", "port": 2222, "ssh_options": options}
    finally:
        if sshd is not None:
            sshd.kill()
            sshd.wait()
        subprocess.run(["ip", "netns", "del", netns], capture_output=True)
        subprocess.run(["ip", "link", "del", host_if], capture_output=True)


def toml_table(values: dict[str, object]) -> str:
    return "{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in values.items()) + " }"


def test_runs_on_a_remote_host_come_back_here_under_that_host(remote: dict[str, object], tmp_path: Path) -> None:
    spec = tmp_path / "remote.toml"
    spec.write_text(
        f"""name = "remote"
blocks = 3
[[workloads]]
name = "churn"
builtin = "alloc.churn"
options = {{ threads = 1, ops = 100000 }}
[[variants]]
name = "native"
[[variants]]
name = "far"
environment = {toml_table(remote)}
[[variants]]
name = "far-jemalloc-shim"
allocator = "jemalloc"
shim = {{ sampling = 10 }}
environment = {toml_table(remote)}
"""
    )
    cli("run", str(spec), check=True)
    data = json.loads(cli("report", "remote", "--format", "json", check=True).stdout)
    here = socket.gethostname()
    assert data["variants"] == [f"native@{here}", "far@remote-lab", "far-jemalloc-shim@remote-lab"]
    assert data["baseline"] == f"native@{here}"
    runs = data["runs"]
    assert all(r["status"] == "ok" for r in runs) and len(runs) == 9
    far = [r for r in runs if r["variant"].startswith("far-jemalloc")]
    assert {r["details"]["allocator"] for r in far} == {"jemalloc"}  # really mapped there, shim included
    assert all(r["metrics"]["items_per_second"] > 0 for r in far)
    hosts = data["experiment"]["hosts"]
    assert sorted(fp["hostname"] for fp in hosts.values()) == sorted([here, "remote-lab"])
    assert any(fp.get("remote") and fp["kernel"] == os.uname().release for fp in hosts.values())
    rows = {r["variant"]: r for r in data["rows"] if r["metric"] == "cpu_time"}
    assert rows["far@remote-lab"]["test"] == "mann-whitney"


def test_an_unreachable_host_is_one_line_before_anything_runs(tmp_path: Path) -> None:
    spec = tmp_path / "nowhere.toml"
    spec.write_text(
        'name = "nowhere"\nblocks = 3\n[[workloads]]\nname = "t"\ncommand = ["true"]\n[[variants]]\nname = "a"\n'
        '[[variants]]\nname = "b"\nenvironment = { kind = "ssh", host = "root@10.231.255.254", ssh_options = ["-o", "ConnectTimeout=1"] }\n'
    )
    proc = cli("run", str(spec))
    assert (
        proc.returncode == 3 and proc.stderr.startswith("benchlab: ssh://root@10.231.255.254:") and proc.stderr.count("\n") == 1
    )
