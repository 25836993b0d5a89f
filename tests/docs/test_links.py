"""The docs' relative links lead somewhere: every linked file exists, every #anchor is a heading."""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs.doc_commands import ROOT, blocks, pages

LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    fenced = {start + i for _, start, lines in blocks(path) for i in range(-1, len(lines) + 1)}
    return {
        _anchor(line.lstrip("#"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if line.startswith("#") and number not in fenced
    }


def test_relative_links_resolve() -> None:
    broken = []
    for page in pages():
        text = "\n".join(line for i, line in enumerate(page.read_text().splitlines(), 1) if not line.startswith(("    ", "$ ")))
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            linked = (page.parent / file).resolve() if file else page
            if not linked.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_readme_stays_short() -> None:
    """The README is the newcomer's first page: set-up, a real output, the studies; the rest is in docs/."""
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250
