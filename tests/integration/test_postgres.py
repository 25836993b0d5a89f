"""The same schema and commands on a real PostgreSQL server that this test starts and stops."""

from __future__ import annotations

import glob
import json
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import cli


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not bins:
        pytest.skip("PostgreSQL server binaries are not installed (the README's test command installs them)")
    bindir = Path(bins[-1]).parent
    root = Path(tempfile.mkdtemp(prefix="benchlab-pg-"))  # outside pytest's root-only folder
    data = root / "data"
    as_user: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        shutil.chown(root, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    port = _free_port()
    subprocess.run([*as_user, str(bindir / "initdb"), "-D", str(data), "--auth=trust", "-U", "postgres"],
                   check=True, capture_output=True)  # fmt: skip
    subprocess.run(
        [*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-w", "-o",
         f"-p {port} -k {root} -c listen_addresses=127.0.0.1", "start"],
        check=True, capture_output=True,
    )  # fmt: skip
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def test_experiment_stored_and_reported_from_postgres(postgres_url: str, tmp_path: Path) -> None:
    spec = tmp_path / "pg.toml"
    spec.write_text("""
name = "pg"
blocks = 4
[[workloads]]
name = "churn"
builtin = "alloc.churn"
options = { threads = 1, ops = 20000 }
[[variants]]
name = "a"
[[variants]]
name = "b"
""")
    cli("run", str(spec), "--db", postgres_url, check=True)
    data = json.loads(cli("report", "pg", "--db", postgres_url, "--format", "json", check=True).stdout)
    assert len([r for r in data["runs"] if r["status"] == "ok"]) == 8
    assert any(r["metric"] == "items_per_second" for r in data["rows"])
    assert "pg" in cli("list", "--db", postgres_url, check=True).stdout
    assert cli("run", str(spec), "--db", postgres_url, "--resume", check=True).returncode == 0
    again = json.loads(cli("report", "pg", "--db", postgres_url, "--format", "json", check=True).stdout)
    assert len(again["runs"]) == 8  # resume repeated nothing


def test_bundles_move_between_sqlite_and_postgres(postgres_url: str, tmp_path: Path) -> None:
    cli("compare", "--cmd", "true", "--variant", "x", "--variant", "y", "-n", "3", "--name", "to-pg", check=True)
    bundle = tmp_path / "b.json"
    cli("export", "to-pg", "-o", str(bundle), check=True)
    cli("import", str(bundle), "--db", postgres_url, check=True)
    here = json.loads(cli("report", "to-pg", "--format", "json", check=True).stdout)
    there = json.loads(cli("report", "to-pg", "--db", postgres_url, "--format", "json", check=True).stdout)
    assert [r["median"] for r in here["rows"]] == [r["median"] for r in there["rows"]]
    assert {r["status"] for r in there["runs"]} == {"ok"}
