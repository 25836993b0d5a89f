"""What a change to benchlab's own code does to the CPU time of its commands: each command run by
this tree and by another checkout of benchlab (`--before`, say a `git worktree add /tmp/before
HEAD~1`), in turn, with the same interpreter and libraries, and the medians and their ratio printed.

Start-up dominates most commands (imports, the collector, the exit), and this VM's CPU time varies by
a tenth from one run to the next, so only interleaved pairs tell a change of a few percent. CPU time
is the kernel's (rusage of the children: user + system), not wall time, which another process's load
would move. The commands run against a small experiment stored first, in a temporary folder.

    uv run python bench/command_cpu.py --before /tmp/before [--pairs 15]
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

HERE = Path(__file__).resolve().parents[1] / "src"
ENTRY = "import sys; sys.argv[0] = 'benchlab'; from benchlab.entry import main; main()"  # as the executable starts
COMMANDS = {
    "report": ["report", "small", "--db", "{db}"],
    "show": ["show", "small", "--db", "{db}"],
    "list": ["list", "--db", "{db}"],
    "compare (a new database)": ["compare", "--cmd", "true", "-V", "a", "-V", "b", "-n", "3", "--db", "{fresh}"],
    "--help": ["--help"],
}


def cpu_seconds(source: Path, words: list[str], folder: Path) -> float:
    """One run of `benchlab WORDS` from the tree at `source`: its user + system CPU time."""
    fresh = folder / "fresh.db"
    for leftover in folder.glob("fresh.db*"):
        leftover.unlink()
    argv = [w.format(db=folder / "small.db", fresh=fresh) for w in words]
    env = os.environ | {"PYTHONPATH": str(source), "BENCHLAB_STATE_DIR": str(folder / "state")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    done = subprocess.run([sys.executable, "-c", ENTRY, *argv], **quiet, env=env, cwd=folder, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"benchlab {' '.join(argv)} from {source} exited {done.returncode}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    given = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    given.add_argument("--before", type=Path, required=True, help="another checkout of benchlab (its root)")
    given.add_argument("--pairs", type=int, default=15)
    args = given.parse_args()
    before = args.before.resolve() / "src"
    if not (before / "benchlab" / "entry.py").is_file():
        raise SystemExit(f"{args.before} is not a checkout of benchlab (no src/benchlab/entry.py)")
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(before / "benchlab"), str(HERE / "benchlab")], check=True)
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        small = ["compare", "--cmd", "true", "-V", "a", "-V", "b", "-n", "3", "--name", "small", "--db", "{db}"]
        cpu_seconds(HERE, small, folder)
        print(f"CPU seconds, medians of {args.pairs} interleaved pairs: before ({args.before}) -> this tree")
        for label, words in COMMANDS.items():
            old, new = [], []
            for _ in range(args.pairs):
                old.append(cpu_seconds(before, words, folder))
                new.append(cpu_seconds(HERE, words, folder))
            was, now = statistics.median(old), statistics.median(new)
            print(f"  {label:26s} {was:6.3f} -> {now:6.3f}  ({now / was:.2f}x)")


if __name__ == "__main__":
    main()
