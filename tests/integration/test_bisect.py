"""`benchlab bisect` on real processes: five versions of a program, each built by the workload's
setup step into a folder of its own, the third one and those after it slower."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import cli

pytestmark = pytest.mark.serial  # measures which version is slower

BUILD = (
    '[ -z "$BROKEN" ] || { echo "no compiler" >&2; exit 1; }; mkdir -p "build/$COMMIT" && if [ "$COMMIT" -ge 3 ]; then d=0.04; else d=0.01; fi && '
    'printf "sleep %s\\n" "$d" > "build/$COMMIT/app.sh"'
)


def spec(root: Path, name: str, commits: list[int], broken: int | None = None) -> Path:
    """A spec over these commits; the build of `broken` fails."""
    root.mkdir(exist_ok=True)
    variants = "".join(
        f'[[variants]]\nname = "v{c}"\nenv = {{ COMMIT = {c}{", BROKEN = 1" if c == broken else ""} }}\n' for c in commits
    )
    path = root / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\n'
        f'[[workloads]]\nname = "app"\ncwd = "{root}"\nsetup = {json.dumps(["sh", "-c", BUILD])}\n'
        f'command = ["sh", "-c", "sh build/$COMMIT/app.sh"]\n{variants}'
    )
    return path


def test_bisect_finds_the_first_slower_version_confirms_it_and_stores_every_step(tmp_path: Path) -> None:
    path = spec(tmp_path / "repo", "series", [0, 1, 2, 3, 4])
    proc = cli("bisect", str(path), timeout=240)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "at most 4 decisions, each at alpha 0.0125 (0.05 / 4)" in lines[0]
    assert lines[1].startswith("ends     v4 vs v0: worse +")
    assert "first bad: v3 (last good: v2), confirmed by comparing the two directly" in proc.stdout
    assert any(line.startswith("boundary v3 vs v2: worse +") and "-> confirmed" in line for line in lines)
    stored = cli("list", check=True).stdout
    for name in ("series-bisect-ends", "series-bisect-boundary"):
        assert name in stored
    boundary = json.loads(cli("report", "series-bisect-boundary", "--format", "json", check=True).stdout)
    assert boundary["variants"] == ["v2", "v3"] and boundary["alpha"] == 0.0125
    wall = next(r for r in boundary["rows"] if r["metric"] == "wall")
    assert wall["verdict"] == "worse" and wall["change"] > 1.0  # 10 ms to 40 ms, and the shell's start

    again = cli("bisect", str(path))
    assert again.returncode == 4 and "--resume" in again.stderr  # a stored step is never run twice by accident
    resumed = cli("bisect", str(path), "--resume", timeout=120)
    assert resumed.returncode == 0 and resumed.stdout == proc.stdout  # every step reused, the same evidence


def test_bad_input_is_refused_before_the_database_is_opened_and_an_undecided_bisection_exits_6(tmp_path: Path) -> None:
    again = spec(tmp_path / "repo", "again", [0, 1, 2])
    pinned = spec(tmp_path / "repo", "pinned", [0, 1, 2])
    pinned.write_text(pinned.read_text() + "cpus = 4095\n")  # on the last variant only
    for path, args, said in (
        (again, ["--metric", "max_rss"], "--metric: 'max_rss' is not judged"),
        (again, ["--metric", "wal"], "'wal' is no metric of this workload"),
        (again, ["--workload", "other"], "--workload: the spec has no workload 'other'"),
        (again, ["--alpha", "0.7"], "--alpha: 0.7 is no error rate"),
        (again, ["--max-blocks", "2"], "--min-blocks/--max-blocks: Input should be greater than or equal to 3"),
        (spec(tmp_path / "repo", "lone", [0]), [], "two variants at least"),
        (pinned, [], "variants[2].cpus: CPU 4095 is not available here"),  # checked before the ends run
    ):
        bad = cli("bisect", str(path), *args)
        assert bad.returncode == 2 and said in bad.stderr, bad.stderr
    assert not (tmp_path / "results.db").exists()  # the private database of this test (tests/conftest.py)

    # all fast: no change between the ends. At alpha 0.05 / 3 an A/A pair is decided once in ~60 (the
    # paired t of 3 blocks); at 0.0001 / 3 its t must pass 173, which no two runs of one program reach
    flat = spec(tmp_path / "repo", "flat", [0, 1, 2])
    proc = cli("bisect", str(flat), "--max-blocks", "3", "--alpha", "0.0001", timeout=120)
    assert proc.returncode == 6, proc.stderr
    assert "nothing bisected: v2 against v0 stayed unclear after 3 blocks" in proc.stdout
    assert proc.stderr.splitlines()[-1].startswith("benchlab: no confirmed answer (ends unclear)")

    broken = cli("bisect", str(spec(tmp_path / "repo", "broken", [0, 1, 2, 3], broken=1)), timeout=120)
    assert broken.returncode == 6, broken.stderr
    assert "step 1   v1 vs v0: unclear n/a -> unclear  (broken-bisect-at-v1; 3 run(s) failed)" in broken.stdout
    assert (
        "stopped: v1 could not be measured (3 run(s) failed: `benchlab report broken-bisect-at-v1` says why); " in broken.stdout
    )
    assert "the first bad variant is one of v1, v2, v3 (after v0)" in broken.stdout  # v1 is never guessed good or bad
