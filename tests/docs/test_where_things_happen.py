"""README's "Where things happen" table names files that exist: it is how a newcomer finds where a
metric is measured, stored and judged, and a file moved or renamed must move its row with it."""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs.doc_commands import ROOT

CODE = re.compile(r"`([^`\s]+)`")
PATH_LIKE = re.compile(r"/|\.(py|rs|md|json|toml)$")


def table_cells(readme: str) -> list[str]:
    """The 'where' cell of every row of the table under '## Where things happen'."""
    section = readme.split("## Where things happen", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| what ")]
    return [row.split(" | ", 1)[1] for row in rows]


def missing_paths(cell: str, root: Path) -> tuple[list[str], int]:
    """The paths a cell names that exist nowhere, and how many it names. A path is read from the
    repository's root or, short as the table writes it (`store/runs.py`, `counters.rs`,
    `../children.rs`), from the folder of a path named before it in the cell (the latest first) or
    one of that folder's parents."""
    missing, named, folders = [], 0, [root]
    for token in CODE.findall(cell):
        if not PATH_LIKE.search(token) or token.startswith("--"):
            continue
        named += 1
        anchors = [root, *(a for folder in reversed(folders) for a in (folder, *folder.parents))]
        found = next((a / token for a in anchors if a.is_relative_to(root) and _exists(a / token)), None)
        if found is None:
            missing.append(token)
        else:
            found = found.parent if "*" in token else found.resolve()
            folders.append(found if found.is_dir() else found.parent)
    return missing, named


def _exists(path: Path) -> bool:
    return any(path.parent.glob(path.name)) if "*" in path.name else path.exists()


def test_every_path_in_the_table_exists() -> None:
    cells = table_cells((ROOT / "README.md").read_text())
    results = [missing_paths(cell, ROOT) for cell in cells]
    missing = [token for gone, _ in results for token in gone]
    assert not missing, f"README's 'Where things happen' names paths that do not exist: {missing}"
    assert len(cells) >= 15 and sum(named for _, named in results) >= 60  # the table was read, not skipped


def test_a_moved_file_is_found_missing(tmp_path: Path) -> None:
    (tmp_path / "src" / "benchlab" / "store").mkdir(parents=True)
    (tmp_path / "src" / "benchlab" / "store" / "runs.py").touch()
    cell = "`src/benchlab/store/runs.py` (inserts), `store/db.py` (gone), `store/runs.py`, `schema.py` |"
    assert missing_paths(cell, tmp_path) == (["store/db.py", "schema.py"], 4)
