"""The commands the docs show, read from README.md and docs/**.md.

One convention everywhere: a command a reader types is a line `$ COMMAND` inside a ```console
block (a line ending in `\\` continues on the next); the lines after it, up to the next `$`, are
its output as shown. A trailing shell comment may say what the docs test must know:

* `# exit N`: the command ends with exit code N (a refusal shown on purpose);
* `# slow`: it runs for a while (pytest's slow marker);
* `# needs: WHAT`: it needs what a test machine lacks (another host, a binder device); skipped,
  with WHAT as the reason;
* `# long: HOW LONG`: a full-length experiment; skipped, since the page also shows and the test
  runs a shorter form of it (`--quick`, fewer blocks);
* `# tested: FILE::TEST`: the named test runs this very command (a guest boot, say, that the
  suite should pay for once); skipped here, and the test must exist.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
EXIT = re.compile(r"#\s*exit (\d+)\b")
NEEDS = re.compile(r"#\s*needs: (.+)$")
LONG = re.compile(r"#\s*long: (.+)$")
SLOW = re.compile(r"#\s*slow\b")
TESTED = re.compile(r"#\s*tested: (\S+)::(\w+)")
BENCHLAB = re.compile(r"([A-Z_][A-Z0-9_]*=\S* )*benchlab\b")


@dataclass(frozen=True)
class DocCommand:
    page: str  # relative to the repository root
    line: int  # where the command starts, 1-based
    text: str  # as a reader types it, continuation lines joined
    exit_code: int
    slow: bool
    skip: str | None  # why the test does not run it

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def runs_benchlab(self) -> bool:
        """Whether the command is `benchlab ...`, perhaps after variables set for it (`COLUMNS=60`)."""
        return BENCHLAB.match(self.text) is not None


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(path: Path) -> list[tuple[str, int, list[str]]]:
    """Every fenced block of a Markdown file: (its language, the line it starts on, its lines)."""
    found: list[tuple[str, int, list[str]]] = []
    fence: str | None = None
    for number, line in enumerate(path.read_text().splitlines(), 1):
        opened = FENCE.match(line)
        if fence is None and opened:
            fence = opened[2]
            found.append((opened[3], number + 1, []))
        elif fence is not None and line.strip().startswith(fence) and not line.strip().strip(fence[0]):
            fence = None
        elif fence is not None:
            found[-1][2].append(line)
    return found


def commands(path: Path) -> list[DocCommand]:
    """The `$` lines of a page's console blocks, in the order a reader meets them."""
    page = str(path.relative_to(ROOT))
    out: list[DocCommand] = []
    for language, start, lines in blocks(path):
        if language != "console":
            continue
        i = 0
        while i < len(lines):
            if not lines[i].startswith("$ "):
                i += 1
                continue
            first, text = i, lines[i][2:]
            while text.endswith("\\") and i + 1 < len(lines):
                i += 1
                text = text[:-1] + "\n" + lines[i]
            i += 1
            comment = text.rsplit("\n", 1)[-1]
            code = EXIT.search(comment)
            needs, long, tested = NEEDS.search(comment), LONG.search(comment), TESTED.search(comment)
            skip = (
                f"needs {needs[1]}" if needs
                else f"long ({long[1]}): the page's shorter form is run" if long
                else f"run by {tested[1]}::{tested[2]}" if tested
                else None
            )  # fmt: skip
            out.append(DocCommand(page, start + first, text, int(code[1]) if code else 0, bool(SLOW.search(comment)), skip))
    return out


def all_commands() -> list[DocCommand]:
    return [c for path in pages() for c in commands(path)]
