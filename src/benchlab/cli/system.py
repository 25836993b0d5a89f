"""Commands about this machine: workloads, doctor, restore."""

from __future__ import annotations

from benchlab.cli import options
from benchlab.cli.console import out
from benchlab.cli.parser import Commands
from benchlab.errors import EnvironmentProblem, SpecError


def workloads(*, fmt: str) -> None:
    """List the built-in workloads with their options and metrics."""
    if fmt not in ("table", "json"):
        raise SpecError(f"--format {fmt}: use table or json")
    from rich.table import Table

    from benchlab.workloads.probe import catalogue  # the core loads for the command that runs, not for every one

    items = catalogue()
    if fmt == "json":
        import json

        out().file.write(json.dumps(list(items.values()), indent=2) + "\n")
        return
    table = Table(title="built-in workloads (benchlab-probe)", title_justify="left", show_lines=True)
    for col in ("workload", "description", "options (default)", "metrics"):
        table.add_column(col, overflow="fold")
    for w in items.values():
        quick = w.get("quick") or {}
        shortened = {name: f" (--quick: {value})" for name, value in quick.items()}
        options = "\n".join(f"{o['name']}={o['default']}{shortened.get(o['name'], '')}" for o in w["options"])
        metrics = "\n".join(f"{m['name']} ({m['unit']}, {m['direction']})" for m in w["metrics"])
        table.add_row(w["name"], w["description"], options, metrics)
    out().print(table)
    out().print("every run also records from wait4: wall, user, sys, max_rss, minor/major faults, voluntary/involuntary switches")


def doctor() -> None:
    """The machine's fingerprint, what it offers experiments, and noise warnings with fixes.

    Printed as indented lines, not a bordered table: at any terminal width every finding and fix
    wraps (a long path folds) and is never cut short."""
    from rich.table import Table
    from rich.text import Text

    from benchlab.doctor import findings

    fp, found = findings()
    out().print("fingerprint", style="bold")
    facts = Table.grid(padding=(0, 1))
    facts.add_column(no_wrap=True)
    facts.add_column(overflow="fold")
    for key, value in fp.items():
        facts.add_row(key, Text(str(value)))
    out().print(facts)
    out().print("checks", style="bold")
    checks = Table.grid(padding=(0, 1))
    checks.add_column(no_wrap=True)
    checks.add_column(overflow="fold")
    for f in found:
        finding = Text(f"{f.topic}: {f.detail}")
        if not f.ok and f.fix:
            finding.append(f"\nfix: {f.fix}", style="dim")
        checks.add_row(Text("ok", "green") if f.ok else Text("!!", "yellow"), finding)
    out().print(checks)


def restore() -> None:
    """Put back knob values, swap and memory left changed by an experiment that was killed.

    Every journalled entry is checked as a spec's would be; what can be restored is, what never
    can (a vanished knob, a path outside /proc/sys and /sys, a device that is no swap area) is
    dropped with a note, and changes whose undoing failed stay journalled and make the command
    fail (exit 3)."""
    from benchlab.variants.knobs import KnobJournal, MachineLock

    with MachineLock().hold("benchlab restore", exclusive=True, purpose="puts knobs back", writes=False):
        done = KnobJournal().restore()
    if not (done.restored or done.dropped or done.failed):
        out().print("nothing to restore: nothing was left changed")
    for restored in done.restored:
        out().print(f"restored {restored}", highlight=False, markup=False)
    for note in done.dropped:
        out().print(f"skipped {note}", highlight=False, markup=False)
    if done.failed:
        raise EnvironmentProblem(
            f"{len(done.failed)} change(s) could not be undone and stay journalled: {'; '.join(done.failed)}",
            hint="fix the cause and run `benchlab restore` again",
        )


def register(commands: Commands) -> None:
    commands.command("workloads", workloads, lambda parser: options.report_format(parser, help="table or json"))
    commands.command("doctor", doctor)
    commands.command("restore", restore)
