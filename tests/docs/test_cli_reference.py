"""The command line and its reference agree: every option and argument of every command says what
it does in `--help`, every command has its page and a link from the README, and where the pages
list what the code accepts (report formats, variant keys) they list all of it."""

from __future__ import annotations

import argparse
import re
from typing import Any

import pytest

from benchlab.cli import parser
from benchlab.cli.diff import DRAWN
from benchlab.cli.history import FORMATS as HISTORY_FORMATS
from benchlab.cli.parser import walk
from benchlab.report import FORMATS
from benchlab.spec.variant_fields import KEYS_HELP
from tests.docs.doc_commands import ROOT, pages

EVERY = walk(parser())
COMMANDS: dict[str, Any] = {name: command for name, command in EVERY if " " not in name}


def option(command: argparse.ArgumentParser, dest: str) -> argparse.Action:
    (found,) = [action for action in command._actions if action.dest == dest]
    return found


@pytest.mark.parametrize(("name", "command"), EVERY, ids=[name for name, _ in EVERY])
def test_every_option_and_argument_says_what_it_does(name: str, command: argparse.ArgumentParser) -> None:
    assert (command.description or "").strip(), f"benchlab {name} has no help text"
    # `db downgrade`'s swallowed words are hidden; a group's commands are checked as commands
    shown = [a for a in command._actions if a.help != argparse.SUPPRESS and not isinstance(a, argparse._SubParsersAction)]
    blank = [(a.option_strings or [a.dest])[0] for a in shown if not (a.help or "").strip()]
    assert not blank, f"benchlab {name}: {', '.join(blank)} without help text"


@pytest.mark.parametrize("readme", ["README.md", "docs/README.md"])
def test_every_command_has_its_page_linked_from_the_readmes(readme: str) -> None:
    text = (ROOT / readme).read_text()
    prefix = "docs/commands" if readme == "README.md" else "commands"
    for name in COMMANDS:
        assert (ROOT / "docs" / "commands" / f"{name}.md").is_file(), f"no docs/commands/{name}.md"
        assert f"[{name}]({prefix}/{name}.md)" in text, f"{readme} does not link benchlab {name}"


def _format_row(page: str) -> list[str]:
    (row,) = [line for line in (ROOT / page).read_text().splitlines() if line.startswith("| `-f`, `--format ")]
    listed = re.match(r"\| `-f`, `--format ([^`]+)`", row)
    assert listed is not None
    return listed[1].split("\\|")


@pytest.mark.parametrize(
    ("page", "accepted"),
    [
        ("docs/commands/run.md", FORMATS),
        ("docs/commands/report.md", FORMATS),
        ("docs/commands/diff.md", DRAWN),
        ("docs/commands/history.md", HISTORY_FORMATS),
    ],
)
def test_a_pages_formats_are_the_ones_accepted(page: str, accepted: Any) -> None:
    assert sorted(_format_row(page)) == sorted(accepted)


def _section(page: str, start: str, end: str) -> str:
    text = (ROOT / page).read_text()
    return text[text.index(start) : text.index(end, text.index(start))]


@pytest.mark.parametrize(
    ("page", "start", "end"),
    [
        ("docs/commands/compare.md", "## Variants", "## Options"),
        ("docs/variants.md", "A variant is `NAME`", "## Fields"),
    ],
)
def test_the_quick_forms_keys_are_all_listed(page: str, start: str, end: str) -> None:
    text = re.sub(r"\s+", " ", _section(page, start, end))
    for key in KEYS_HELP.split(", "):
        field = key.split(".")[0]
        assert f"`{field}=" in text or f"`{field}." in text, f"{page} does not list the key {key}"
    assert "`memory.FIELD=`" in text


def test_the_compare_page_names_every_environment_kind() -> None:
    text = re.sub(r"\s+", " ", _section("docs/commands/compare.md", "## Variants", "## Options"))
    for kind in ("`container`", "`vm`", "`ssh://user@host`", "`environment.FIELD=`"):
        assert kind in text


def test_a_sweep_may_sweep_every_field_the_page_lists() -> None:
    (comment,) = [line for line in (ROOT / "docs/sweeps.md").read_text().splitlines() if line.startswith("field = ")]
    for key in ("allocator", "cpus", "env.VAR", "tunables.NAME", "knobs.PATH", "shim.sampling", "memory.FIELD"):
        assert key in comment


def test_until_decided_waits_for_the_primary_rows_wherever_it_is_described() -> None:
    """`analysis.undecided` waits for primary rows only: help, spec reference and pages say so."""
    assert "every primary row" in (option(COMMANDS["run"], "until_decided").help or "")
    for page in ("docs/spec.md", "docs/commands/run.md"):
        assert "every primary row" in (ROOT / page).read_text()
    for page in pages():
        assert "every judged row" not in page.read_text(), f"{page.relative_to(ROOT)} says 'every judged row'"


def test_the_demo_does_not_promise_the_database_variable() -> None:
    said = option(COMMANDS["demo"], "db").help or ""
    assert "[env: BENCHLAB_DB]" not in said and "BENCHLAB_DB is not read" in said


def test_the_pages_speak_to_users_not_about_how_they_were_asked_for() -> None:
    for page in pages():
        found = re.search(r"\b(the|this|an?) issue\b|\bissue #?\d+", page.read_text(), re.IGNORECASE)
        assert found is None, f"{page.relative_to(ROOT)}: '{found[0]}'"
