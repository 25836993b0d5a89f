"""`benchlab ipc throughput|latency`: a quick look at every IPC mechanism on this machine."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.table import Table
from typer.core import TyperCommand

from benchlab.cli.console import err, out
from benchlab.errors import SpecError
from benchlab.report import safe

if TYPE_CHECKING:
    from benchlab.ipc import ProbeOutput

Mechanism = Annotated[
    list[str], typer.Option("--mechanism", "-m", help="pipe, unix, seqpacket, eventfd, futex, binder or all (repeatable)")
]
Placement = Annotated[str, typer.Option("--placement", help="unpinned, same (one CPU for both ends) or different")]
SpinUs = Annotated[int, typer.Option("--spin-us", help="spin this long before each blocking receive (0: block)")]
Environment = Annotated[
    str,
    typer.Option(
        "--environment", "-e",
        help="local, or vm followed by the vm's fields as key=value words: 'vm kernel=6.1.0-56 memory=2G' "
        "(a guest booted for these runs; binder's module loaded where its kernel has it)",
    ),
]  # fmt: skip


def _say(workload: str, result: ProbeOutput) -> None:
    """The probe's lines for people (the verbose ones) as they came, then its notes; the
    inheritance result is summed up once after the table."""
    for line in result.stderr.splitlines():
        err.print(safe.text(line, limit=safe.LINE_MAX), highlight=False, soft_wrap=True)
    for note in result.said.notes:
        err.print(safe.text(f"{workload}: {note.text}", limit=safe.LINE_MAX), highlight=False, soft_wrap=True)


def _run_each(kind: str, asked: list[str], options: dict[str, object], fmt: str, environment: str) -> dict[str, ProbeOutput]:
    """`ipc.<mechanism>.<kind>` for each mechanism asked for (binder only where the kernel has
    it), here or in one guest booted for them all."""
    # the probe's machinery (and the database layer under it) loads for the ipc commands only
    from benchlab.ipc import binder_status, guest, mechanisms, run_probe
    from benchlab.measure.host import EMULATED
    from benchlab.spec.quick import parse_environment

    spec = parse_environment(environment)
    if spec.kind not in ("local", "vm"):
        raise SpecError(f"ipc runs here (local) or in a guest (vm), not in {spec.label}", where="--environment")
    executor, binder_missing = guest(spec, "--environment") if spec.kind == "vm" else (None, binder_status())
    results = {}
    try:
        for m in mechanisms(asked, binder_missing):
            results[m] = run_probe(f"ipc.{m}.{kind}", options, fmt, executor)
            _say(f"ipc.{m}.{kind}", results[m])
        if executor is not None and executor.fingerprint.get("emulated"):  # how to read the guest's times
            err.print(safe.text(f"guest {executor.guest.release}: {EMULATED}", limit=safe.LINE_MAX), soft_wrap=True)
    finally:
        if executor is not None:
            executor.close()
    if binder_missing and (not asked or {"all", "binder"} & set(asked)):
        err.print(safe.text(binder_missing, limit=safe.LINE_MAX), soft_wrap=True)
    return results


def _check_format(fmt: str, allowed: tuple[str, ...]) -> None:
    if fmt not in allowed:
        raise SpecError(f"--format {fmt}: use one of {', '.join(allowed)}")


def throughput(
    mechanism: Mechanism = [],  # noqa: B006
    placement: Placement = "unpinned",
    iterations: Annotated[int, typer.Option("--iterations", "-i", help="timed transactions per payload")] = 2000,
    min_payload: Annotated[str, typer.Option("--min-payload", help="the smallest payload in bytes (4, 1k, 64k)")] = "4",
    max_payload: Annotated[
        str, typer.Option("--max-payload", help="the largest payload: from the smallest, doubling up to it")
    ] = "64k",
    spin_us: SpinUs = 0,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table or json")] = "table",
    environment: Environment = "local",
) -> None:
    """Synchronous request/reply at payloads 4 B..64 KiB over each mechanism (Android's binder throughput test):
    Google Benchmark's Time, CPU and Iterations per payload, and the payload bytes per second."""
    _check_format(fmt, ("table", "json"))
    options = {
        "placement": placement,
        "iterations": iterations,
        "min-payload": min_payload,
        "max-payload": max_payload,
        "spin-us": spin_us,
    }
    docs = {m: result.document for m, result in _run_each("throughput", mechanism, options, "json", environment).items()}
    if fmt == "json":
        out.file.write(json.dumps(docs, indent=2) + "\n")
        return
    title = f"IPC throughput ({placement}): per transaction, as Google Benchmark's table (CPU: the caller's)"
    table = Table(title=title, title_justify="left")
    for column in ("payload", "mechanism", "Time", "CPU", "Iterations", "payload/s"):
        table.add_column(column, justify="left" if column == "mechanism" else "right", no_wrap=True)
    for m, doc in docs.items():
        for entry in doc["benchmarks"]:
            table.add_row(
                entry["name"].rsplit("/", 1)[1], m, f"{entry['real_time'] / 1000:.1f} µs", f"{entry['cpu_time'] / 1000:.1f} µs",
                str(entry["iterations"]), f"{entry['bytes_per_second'] / 1e6:.2f} MB/s",
            )  # fmt: skip
    out.print(table)


def _half_row(mech: str, half: str, group: dict[str, Any]) -> list[str]:
    times = group[f"{half}_ms"]
    if "skipped" in times:
        return [mech, half, times["skipped"], *[""] * 8]
    micros = [f"{times[key] * 1000:.1f}" for key in ("bst", "avg", "p50", "p99", "p99.9", "wst")]
    same_cpu = f"{group['S']}/{group['I']}" if half == "other" else ""  # Android counts both halves together
    return [mech, half, *micros, str(times["miss"]), f"{times['meetR']:.3f}", same_cpu]


def latency(
    mechanism: Mechanism = [],  # noqa: B006
    iterations: Annotated[int, typer.Option("--iterations", "-i", help="iterations per pair")] = 1000,
    pair: Annotated[int, typer.Option("--pair", help="client/server process pairs at once (also -pair N)")] = 1,
    deadline_us: Annotated[
        int, typer.Option("--deadline-us", help="a transaction slower than this misses (also -deadline_us N)")
    ] = 2500,
    placement: Placement = "unpinned",
    spin_us: SpinUs = 0,
    payload: Annotated[int, typer.Option("--payload", help="bytes per message (16-byte header included)")] = 32,
    fifo_priority: Annotated[int, typer.Option("--fifo-priority", help="the real-time caller's priority")] = 1,
    inheritance: Annotated[str, typer.Option("--inheritance", help="pi, plain or off: the lock of the inheritance check")] = "pi",
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="every process's pid, tid, CPU and policy")] = False,
    trace: Annotated[bool, typer.Option("--trace", help="trace_marker and stop tracing on the first miss (also -trace)")] = False,
    force: Annotated[bool, typer.Option("--force", help="allow more pairs than CPUs")] = False,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table, android (the Android test's JSON) or json")] = "table",
    environment: Environment = "local",
) -> None:
    """Client/server pairs, one SCHED_OTHER and one SCHED_FIFO call per iteration, against a deadline (binder latency test)."""
    _check_format(fmt, ("table", "android", "json"))
    options = {
        "iterations": iterations, "pair": pair, "deadline-us": deadline_us, "placement": placement, "spin-us": spin_us,
        "payload": payload, "fifo-priority": fifo_priority, "inheritance": inheritance, "verbose": verbose,
        "trace": trace, "force": force,
    }  # fmt: skip
    results = _run_each("latency", mechanism, options, "json" if fmt == "json" else "android", environment)
    docs = {m: result.document for m, result in results.items()}
    if fmt != "table":
        out.file.write(json.dumps(next(iter(docs.values())) if len(docs) == 1 else docs, indent=2) + "\n")
        return
    title = f"IPC latency in µs ({pair} pair(s), {placement}, deadline {deadline_us} µs)"
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    header = ("mechanism", "caller", "best", "avg", "p50", "p99", "p99.9", "worst", "miss", "meetR", "S/I")
    rows = [_half_row(m, half, doc["ALL"]) for m, doc in docs.items() for half in ("other", "fifo")]
    for i, col in enumerate(header):
        width = max(len(col), *(len(row[i]) for row in rows))  # never squeezed into an ellipsis
        table.add_column(col, justify="left" if i < 2 else "right", min_width=width, no_wrap=True)
    for row in rows:
        table.add_row(*row)
    out.print(table)
    checks = [r.said.inheritance for r in results.values() if r.said.inheritance is not None]
    verdicts = ", ".join(sorted({check.verdict for check in checks})) or "OFF"
    out.print(f"priority inheritance ({inheritance} lock): {verdicts}" + (f" ({checks[0].text})" if checks else ""))


ANDROID_FLAGS = {"-pair": "--pair", "-deadline_us": "--deadline-us", "-trace": "--trace"}  # `-i`, `-v`: short flags


class AndroidFlags(TyperCommand):
    """`benchlab ipc latency` also takes the Android latency test's own flags (`-pair 2`,
    `-deadline_us 500`, `-trace`), since the study's users type them. Click reads a
    single-dash word as a bundle of one-letter flags (`-pair` as `-p -a -i -r`), so these
    are turned into their long forms before it parses; `-i` and `-v` are already short
    flags of --iterations and --verbose. A word after `--` is left as it is."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        end = args.index("--") if "--" in args else len(args)
        return super().parse_args(ctx, [*map(_long_form, args[:end]), *args[end:]])


def _long_form(word: str) -> str:
    """`-pair` -> `--pair`, `-deadline_us=500` -> `--deadline-us=500`; any other word as it is."""
    name, eq, value = word.partition("=")
    return ANDROID_FLAGS[name] + eq + value if name in ANDROID_FLAGS else word


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="A quick look at IPC mechanisms (binder's throughput and latency tests).", no_args_is_help=True)
    group.command()(throughput)
    group.command(cls=AndroidFlags)(latency)
    app.add_typer(group, name="ipc")
