"""Every `benchlab` command the docs show runs as written, after the README's set-up.

Each command runs in a shell with the .venv's bin first on PATH (what `. .venv/bin/activate`
does), with a private results database and state directory per page: a page's commands share them
in the order a reader types them, so `benchlab report NAME` finds what the `benchlab run` above it
stored. They run in a folder of the page's own where `examples` is the repository's, so
`examples/...` resolves as in a checkout and the files a command writes (`-o here.json`) land
there, not in the checkout. Each must end with exit code
0, or the code the page states beside it (`# exit 2`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.doc_commands import ROOT, TESTED, DocCommand, all_commands, blocks, pages

COMMANDS = all_commands()
BIN = Path(sys.executable).parent


def _params(commands: list[DocCommand]) -> list[object]:
    """One test per command; after a slow one, the rest of its page is slow too, since they may
    read what it stored (deselecting slow tests must not leave them without it). A page's commands
    are one group of the parallel phase (`--dist loadgroup`): one worker runs them in the page's order."""
    slow_pages: set[str] = set()
    params = []
    for command in commands:
        if command.slow and command.skip is None:
            slow_pages.add(command.page)
        marks = [pytest.mark.xdist_group(f"page:{command.page}")]
        marks += [pytest.mark.slow] if command.page in slow_pages else []
        params.append(pytest.param(command, id=command.id, marks=marks))
    return params


@pytest.fixture(scope="module")
def pages_run() -> dict[str, Path]:
    return {}


@pytest.mark.parametrize("command", _params(COMMANDS))
def test_doc_command_runs_as_written(
    command: DocCommand, pages_run: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> None:
    if command.skip is not None:
        pytest.skip(command.skip)
    if not command.runs_benchlab:
        pytest.skip("set-up or a bench/ speed check, not a benchlab command (CI runs ./dev test itself)")
    folder = pages_run.get(command.page)
    if folder is None:
        folder = pages_run[command.page] = tmp_path_factory.mktemp("page")
        (folder / "examples").symlink_to(ROOT / "examples")
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "VIRTUAL_ENV": str(BIN.parent),
        "BENCHLAB_DB": str(folder / "results.db"),
        "BENCHLAB_STATE_DIR": str(folder / "state"),
        "COLUMNS": "100",
    }
    proc = subprocess.run(["bash", "-c", command.text], cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == command.exit_code, (
        f"{command.id}: `{command.text}` exited {proc.returncode}, the page says {command.exit_code}:\n"
        f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    )


def test_docs_show_commands_one_way() -> None:
    """Commands live in ```console blocks as `$ COMMAND` lines, so that this test finds them all:
    no ```sh, ```bash or ```shell block, and no console block without a `$` line."""
    wrong = [
        f"{path.relative_to(ROOT)}:{start}: a ```{language} block (write commands as `$ ...` lines in ```console)"
        for path in pages()
        for language, start, lines in blocks(path)
        if language in ("sh", "bash", "shell", "zsh") or (language == "console" and not any(x.startswith("$ ") for x in lines))
    ]
    assert not wrong, "\n".join(wrong)


def test_docs_show_benchlab_commands() -> None:
    """The extraction finds the commands (a changed convention must not make this test empty)."""
    shown = [c for c in COMMANDS if c.runs_benchlab]
    assert len(shown) > 30 and {c.page for c in shown} >= {"README.md", "docs/commands/run.md"}


def test_commands_left_to_another_test_name_one_that_exists() -> None:
    """A `# tested: FILE::TEST` skip stands only while that test is there to run the command."""
    missing = []
    for command in COMMANDS:
        found = TESTED.search(command.text.rsplit("\n", 1)[-1])
        if found is None:
            continue
        test_file = ROOT / found[1]
        if not test_file.is_file() or f"def {found[2]}(" not in test_file.read_text():
            missing.append(f"{command.id}: {found[1]}::{found[2]}")
    assert not missing, "\n".join(missing)
