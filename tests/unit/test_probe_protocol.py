"""benchlab reads its native parts (the probe, the shim, the remote side) only through
versioned JSON fields: no Python code matches the words they write for people, so those
words are free to change."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchlab.errors import EnvironmentProblem
from benchlab.measure.process import ACCOUNT_PROTOCOL, Launch, finished_from_account

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sorted((ROOT / "src" / "benchlab").rglob("*.py"))
# what the probe, the launcher and the shim write for people: eprintln! lines, the shim's lines without
# allocation, and the messages made ahead for a child to write (a failed exec's: named for their program)
HUMAN = re.compile(r'eprintln!\(\s*"((?:[^"\\]|\\.)*)"|\.text\(b"((?:[^"\\]|\\.)*)"\)|format!\(\s*"(benchlab-(?:[^"\\]|\\.)*)"')
# stderr text taken apart: a prefix, a split, a pattern
PARSING = re.compile(r"stderr\S*\.(startswith|endswith|removeprefix|partition|rpartition|split)\(|re\.\w+\([^)]*stderr")


def human_fragments() -> set[str]:
    """The fixed words of every human message, cut at their placeholders; short ones say too little."""
    fragments = set()
    for source in [*(ROOT / "probe" / "src").rglob("*.rs"), *(ROOT / "probe" / "shim" / "src").rglob("*.rs")]:
        for match in HUMAN.finditer(source.read_text()):
            text = match.group(1) or match.group(2) or match.group(3)
            if '\\"' in text:
                continue  # a JSON line of the shim's report: for benchlab, not for people
            fragments |= {
                part.strip() for part in re.split(r"\{[^}]*\}|\\n", text) if len(part.strip()) >= 10 and " " in part.strip()
            }
    return fragments


def test_the_messages_for_people_are_found() -> None:
    fragments = human_fragments()
    assert any("use-after-free write caught in pid" in f for f in fragments)  # the shim's
    assert "benchlab-probe: note:" in fragments and ": priority inheritance" in fragments  # the probe's
    assert "benchlab-launch: cannot execute" in fragments  # the launcher's, for a failed exec


def test_no_python_code_reads_the_words_of_a_message_for_people() -> None:
    fragments = human_fragments()
    found = [
        f"{path.relative_to(ROOT)}: {fragment!r}" for path in PYTHON for fragment in fragments if fragment in path.read_text()
    ]
    assert found == []


def test_no_python_code_takes_stderr_text_apart() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in PYTHON
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if PARSING.search(line)
    ]
    assert found == []


def test_the_launchers_account_of_another_protocol_is_refused_not_misread() -> None:
    launch = Launch(argv=("/bin/true",), env={}, cwd=None, cpus=None, timeout=30)
    assert finished_from_account({"protocol": ACCOUNT_PROTOCOL, "exit_code": 0}, launch, False, b"", b"", None).ok
    for account in ({"protocol": ACCOUNT_PROTOCOL + 1, "exit_code": 0}, {"exit_code": 0}):
        with pytest.raises(EnvironmentProblem, match=f"account protocol .*, this benchlab reads {ACCOUNT_PROTOCOL}"):
            finished_from_account(account, launch, False, b"", b"", None)
