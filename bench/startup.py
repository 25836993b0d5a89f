"""What starting `benchlab` costs: the CPU time (user + system, from the kernel's rusage of the
children) of `--version`, `--help`, every command's `--help` and refusals of bad input, each as a
ratio to a bare `python -c pass` of the same interpreter, measured interleaved so drift cancels.
At most 3x is asked; a ratio above it is printed with `!!`.

A spec whose TOML parses but whose contents are wrong is refused by the spec's pydantic models,
so that refusal costs pydantic's import and the models' building: `import pydantic_core` alone
is about 3x, and the script prints it as that refusal's floor.

    .venv/bin/python bench/startup.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

LIMIT = 3.0  # issue 30: at most 3x the CPU time of `python -c pass`


def cases(folder: Path) -> dict[str, list[str]]:
    from benchlab.cli import parser
    from benchlab.cli.parser import walk
    from benchlab.store import Store

    bad_toml = folder / "bad.toml"
    bad_toml.write_text('name = "x"\n[[workloads]\n')  # not TOML
    bad_content = folder / "content.toml"
    bad_content.write_text('name = "x"\nruns = "five"\n[[workloads]]\nname = "w"\n')
    stored = str(folder / "results.db")  # a database at this benchlab's schema, holding no experiment
    Store(stored).engine.dispose()
    shown = {"--version": ["--version"], "--help": ["--help"]}
    shown |= {f"{name} --help": [*name.split(), "--help"] for name, _ in walk(parser())}
    shown |= {
        "refused: run a missing spec": ["run", str(folder / "missing.toml")],
        "refused: run a spec that is not TOML": ["run", str(bad_toml)],
        "refused: an unknown flag": ["report", "--bogus", "x"],
        "refused: a count that is no number": ["compare", "-n", "3.0", "--cmd", "true"],
        "refused: an unknown format": ["report", "x", "--format", "xml"],
        "refused: an unknown command": ["frobnicate"],
        "refused: a spec whose contents are wrong (pydantic)": ["run", str(bad_content)],
        "refused: report an experiment the database does not hold": ["report", "absent", "--db", stored],
        "refused: show an experiment the database does not hold": ["show", "absent", "--db", stored],
        "refused: report from a --db path that is not there": ["report", "x", "--db", str(folder / "none.db")],
    }
    return shown


FLOOR = {"floor: python -c 'import pydantic_core'": ["-c", "import pydantic_core"]}


def cpu_seconds(argv: list[str]) -> float:
    """The user + system CPU time of one run of `argv` (output discarded)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    subprocess.run(argv, **quiet, check=False, env=os.environ | {"BENCHLAB_DB": "/nonexistent/x.db"})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    given = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    given.add_argument("--repeat", type=int, default=15)
    repeat = given.parse_args().repeat
    benchlab = str(Path(sys.executable).with_name("benchlab"))
    with tempfile.TemporaryDirectory() as folder:
        worst = 0.0
        shown = {name: [benchlab, *words] for name, words in cases(Path(folder)).items()}
        shown |= {name: [sys.executable, *words] for name, words in FLOOR.items()}
        for name, argv in shown.items():
            ratios = []
            for _ in range(repeat):  # interleaved: each command beside its own bare start
                bare = cpu_seconds([sys.executable, "-c", "pass"])
                ratios.append(cpu_seconds(argv) / max(bare, 1e-4))
            ratio = statistics.median(ratios)
            worst = worst if name in FLOOR else max(worst, ratio)
            print(f"{'!!' if ratio > LIMIT else '  '} {ratio:5.2f}x  {name}")
        print(f"worst {worst:.2f}x of `python -c pass` (median of {repeat} interleaved pairs; at most {LIMIT:g}x asked)")


if __name__ == "__main__":
    main()
