"""Output files and links another user planted: benchlab runs as root, so every file it writes at
a name it is given (`report -o`, `export -o` and its default name, every `--export-*`) is a place
to plant `report.csv -> /root/secret`. Each is refused in one line with exit 2, the link and what
it points at untouched; a new file gets the umask's mode, a replaced one keeps its own.

The links are made by root here and handed to `nobody`, as another user of a sticky /tmp would
own them; the suite runs as root (the CI does), and is skipped otherwise.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchlab.cli.options import EXPORTS
from benchlab.cli.outputs import write_whole
from benchlab.errors import SpecError
from tests.conftest import cli
from tests.hostile.conftest import refused

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="planting another user's link needs root")
NOBODY = 65534
SECRET = b"root-only\n"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with one stored experiment, 'ex'."""
    root = tmp_path_factory.mktemp("links")
    env = {"BENCHLAB_DB": str(root / "r.db"), "BENCHLAB_STATE_DIR": str(root / "state")}
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        cli("compare", "--cmd", "true", "-V", "a", "-n", "2", "--name", "ex", check=True)
    return root / "r.db"


@pytest.fixture
def stored(template: Path) -> None:
    shutil.copy(template, os.environ["BENCHLAB_DB"])


@pytest.fixture
def sticky(tmp_path: Path) -> Iterator[Path]:
    """A world-writable sticky folder, as /tmp is, with a root-only file and folder beside it."""
    folder = tmp_path / "sticky"
    folder.mkdir()
    folder.chmod(0o1777)
    secret = tmp_path / "secret"
    secret.write_bytes(SECRET)
    secret.chmod(0o600)
    (tmp_path / "private").mkdir(mode=0o700)
    yield folder


def plant(link: Path, target: Path) -> Path:
    """`link -> target`, owned by another user."""
    link.symlink_to(target)
    os.lchown(link, NOBODY, NOBODY)
    return link


def untouched(tmp_path: Path, link: Path, target: Path) -> None:
    secret = tmp_path / "secret"
    assert secret.read_bytes() == SECRET and stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert list((tmp_path / "private").iterdir()) == []
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert not (tmp_path / "dangling-target").exists()
    assert [p.name for p in link.parent.iterdir()] == [link.name], "a temporary file was left"


TARGETS = {"file": "secret", "dir": "private", "dangling": "dangling-target"}


@pytest.mark.usefixtures("stored")
@pytest.mark.parametrize("kind", TARGETS)
def test_report_output_refuses_a_planted_link(tmp_path: Path, sticky: Path, kind: str) -> None:
    target = tmp_path / TARGETS[kind]
    link = plant(sticky / "report.csv", target)
    refused("report", "ex", "--format", "csv", "-o", str(link), mentions="symbolic link of another user")
    untouched(tmp_path, link, target)


@pytest.mark.usefixtures("stored")
def test_a_folder_reached_through_a_planted_link_is_refused(tmp_path: Path, sticky: Path) -> None:
    """`/tmp/out -> /root/private` planted for `-o /tmp/out/report.csv`."""
    link = plant(sticky / "out", tmp_path / "private")
    refused("report", "ex", "-o", str(link / "report.csv"), mentions="reached through")
    refused("export", "ex", "-o", str(link / "ex.json"), mentions="reached through")
    assert list((tmp_path / "private").iterdir()) == []


@pytest.mark.usefixtures("stored")
@pytest.mark.parametrize("flag", [f"--export-{name}" for name in EXPORTS])
def test_every_export_refuses_a_planted_link_before_reading(tmp_path: Path, sticky: Path, flag: str) -> None:
    target = tmp_path / "secret"
    link = plant(sticky / "out", target)
    refused("report", "ex", flag, str(link), mentions=flag)
    untouched(tmp_path, link, target)


@pytest.mark.usefixtures("stored")
@pytest.mark.parametrize("named", [True, False], ids=["-o", "default-name"])
def test_export_refuses_a_planted_link(tmp_path: Path, sticky: Path, named: bool) -> None:
    target = tmp_path / "secret"
    link = plant(sticky / "ex.benchlab.json", target)
    args = ["-o", str(link)] if named else []
    refused("export", "ex", *args, cwd=sticky, mentions="symbolic link")
    untouched(tmp_path, link, target)


def test_run_refuses_a_planted_export_link_before_anything_runs(tmp_path: Path, sticky: Path) -> None:
    target = tmp_path / "secret"
    link = plant(sticky / "run.csv", target)
    refused("compare", "--cmd", "true", "-V", "a", "-n", "2", "--export-csv", str(link), mentions="--export-csv")
    untouched(tmp_path, link, target)
    assert not Path(os.environ["BENCHLAB_DB"]).exists()


@pytest.mark.parametrize("path", ["/proc/version", "/proc/nonexistent.csv", "/sys/kernel/x.csv"])
def test_an_export_that_cannot_be_written_is_refused_before_anything_runs(path: str) -> None:
    """As root every access check passes: /proc/version passed, the runs were stored, then exit 2."""
    refused("compare", "--cmd", "true", "-V", "a", "-n", "2", "--export-csv", path, mentions=path)
    assert not Path(os.environ["BENCHLAB_DB"]).exists()


@pytest.mark.usefixtures("stored")
def test_new_files_get_the_umask_mode_and_a_replaced_one_keeps_its_own(tmp_path: Path) -> None:
    (tmp_path / "secret").write_bytes(SECRET)
    (tmp_path / "secret").chmod(0o600)
    old = os.umask(0o027)
    try:
        cli("report", "ex", "--format", "csv", "-o", str(tmp_path / "new.csv"), check=True)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.csv").stat().st_mode) == 0o640
    cli("report", "ex", "--format", "csv", "-o", str(tmp_path / "secret"), check=True)  # named by its owner: replaced
    assert stat.S_IMODE((tmp_path / "secret").stat().st_mode) == 0o600
    assert (tmp_path / "secret").read_text().startswith("workload,")


@pytest.mark.usefixtures("stored")
def test_a_link_of_this_user_is_still_written_through_and_a_pipe_into(tmp_path: Path) -> None:
    """Only another user's link is refused: one's own link to one's file, and /dev/stdout, work as before."""
    (tmp_path / "secret").write_bytes(SECRET)
    mine = tmp_path / "mine.csv"
    mine.symlink_to(tmp_path / "secret")
    cli("report", "ex", "--format", "csv", "-o", str(mine), check=True)
    assert mine.is_symlink() and (tmp_path / "secret").read_text().startswith("workload,")
    proc = cli("report", "ex", "--format", "csv", "-o", "/dev/stdout", check=True)
    assert proc.stdout.startswith("workload,")


@pytest.mark.usefixtures("stored")
def test_another_users_pipe_is_refused(tmp_path: Path, sticky: Path) -> None:
    fifo = sticky / "report.csv"
    os.mkfifo(fifo)
    os.chown(fifo, NOBODY, NOBODY)
    refused("report", "ex", "-o", str(fifo), mentions="no regular file of another user", timeout=30)


RACER = """
import os, sys, time
os.chdir(sys.argv[1])  # the sticky folder, reached as root; the loop then runs as another user
os.setgid(65534)
os.setuid(65534)
end = time.monotonic() + float(sys.argv[3])
while time.monotonic() < end:
    os.rename("d", "d-aside")
    os.symlink(sys.argv[2], "d")
    os.unlink("d")
    os.rename("d-aside", "d")
"""


def test_a_folder_swapped_for_a_planted_link_while_it_is_opened_is_never_entered(tmp_path: Path, sticky: Path) -> None:
    """Another user (a process of theirs, so their links are theirs from the start) owns a folder
    under /tmp and, in a loop, swaps it for a link to a root-only folder and back: every write into it lands in the folder or is refused, never in the target."""
    folder = sticky / "d"
    folder.mkdir()
    os.chown(folder, NOBODY, NOBODY)
    racer = subprocess.Popen([sys.executable, "-c", RACER, str(sticky), str(tmp_path / "private"), "8"])
    written = refused_writes = 0
    try:
        while racer.poll() is None and written + refused_writes < 4000:
            try:
                write_whole(folder / "authorized_keys", b"planted?\n")
                written += 1
            except SpecError:
                refused_writes += 1
    finally:
        racer.kill()
        racer.wait()
    assert list((tmp_path / "private").iterdir()) == []
    assert written > 0 and refused_writes > 0  # the race was run: both sides were seen


def test_an_export_whose_folder_goes_during_the_run_is_exit_3_and_the_runs_are_stored(tmp_path: Path) -> None:
    """What changes under a long run is the machine's doing, not bad input: exit 3, never exit 2
    ("nothing ran, nothing stored"), and the line says how to write the file again."""
    folder = tmp_path / "out"
    folder.mkdir()
    proc = cli(
        "compare", "--cmd", f"rm -rf {folder}", "-V", "a", "-n", "2", "--name", "gone", "--export-csv", str(folder / "r.csv")
    )
    assert proc.returncode == 3, proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if "cannot write" in x]
    assert "the runs are stored as 'gone'" in line and "benchlab report gone --export-csv FILE" in line
    assert cli("report", "gone", "--format", "csv", check=True).stdout.count("\n") > 1


@pytest.mark.parametrize(
    ("command", "kind"), [(("list",), "dangling"), (("compare", "--cmd", "true", "-V", "a", "-n", "2"), "file")]
)
def test_a_planted_link_at_the_database_is_refused(tmp_path: Path, sticky: Path, command: tuple[str, ...], kind: str) -> None:
    """`--db /tmp/results.db` where another user planted `results.db -> /root/x`: SQLite would
    open the target, or create a database where a link to nothing points."""
    target = tmp_path / TARGETS[kind]
    link = plant(sticky / "results.db", target)
    refused(*command, "--db", str(link), mentions="symbolic link of another user")
    untouched(tmp_path, link, target)
    below = plant(sticky / "dir", tmp_path / "private")
    refused("list", "--db", str(below / "results.db"), mentions="reached through")
    assert list((tmp_path / "private").iterdir()) == []


@pytest.mark.usefixtures("stored")
def test_a_database_link_of_this_user_works_and_one_to_nothing_or_a_side_link_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One's own link to one's database is followed as before; a link to nothing is not made a
    database, whoever made it; a link at SQLite's side file (-wal) is named (SQLite never follows it)."""
    mine = tmp_path / "mine.db"
    mine.symlink_to(os.environ["BENCHLAB_DB"])
    assert "ex" in cli("list", "--db", str(mine), check=True).stdout
    monkeypatch.setenv("BENCHLAB_DB", str(tmp_path / "nothing.db"))
    (tmp_path / "nothing.db").symlink_to(tmp_path / "dangling-target")
    refused("list", mentions="a symbolic link to nothing")
    assert not (tmp_path / "dangling-target").exists()
    wal = tmp_path / "results.db-wal"
    wal.symlink_to(tmp_path / "dangling-target")
    refused("report", "ex", "--db", str(tmp_path / "results.db"), mentions="results.db-wal is a symbolic link")
    assert not (tmp_path / "dangling-target").exists()
