"""benchlab reads its native parts (the probe, the shim, the remote side) only through
versioned JSON fields: no Python code matches the words they write for people, so those
words are free to change."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sorted((ROOT / "src" / "benchlab").rglob("*.py"))
# what the probe and the shim write for people: eprintln! lines and the shim's lines without allocation
HUMAN = re.compile(r'eprintln!\(\s*"((?:[^"\\]|\\.)*)"|\.text\(b"((?:[^"\\]|\\.)*)"\)')
# stderr text taken apart: a prefix, a split, a pattern
PARSING = re.compile(r"stderr\S*\.(startswith|endswith|removeprefix|partition|rpartition|split)\(|re\.\w+\([^)]*stderr")


def human_fragments() -> set[str]:
    """The fixed words of every human message, cut at their placeholders; short ones say too little."""
    fragments = set()
    for source in [*(ROOT / "probe" / "src").rglob("*.rs"), *(ROOT / "probe" / "shim" / "src").rglob("*.rs")]:
        for match in HUMAN.finditer(source.read_text()):
            text = match.group(1) or match.group(2)
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
