"""`benchlab ipc throughput|latency`: a quick look at every IPC mechanism on this machine."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from benchlab.cli.console import err, out
from benchlab.errors import SpecError
from benchlab.ipc import ProbeOutput, binder_status, mechanisms, run_probe
from benchlab.report import safe

Mechanism = Annotated[
    list[str], typer.Option("--mechanism", "-m", help="pipe, unix, seqpacket, eventfd, futex, binder or all (repeatable)")
]
Placement = Annotated[str, typer.Option("--placement", help="unpinned, same (one CPU for both ends) or different")]
SpinUs = Annotated[int, typer.Option("--spin-us", help="spin this long before each blocking receive (0: block)")]


FINDING = ": priority inheritance "


def _say(messages: list[str]) -> None:
    """The probe's notes and verbose lines; the inheritance finding is summed up once after the table."""
    for line in messages:
        if FINDING not in line:
            err.print(safe.text(line, limit=safe.LINE_MAX), highlight=False, soft_wrap=True)


def _run_each(kind: str, asked: list[str], options: dict[str, object], fmt: str) -> dict[str, ProbeOutput]:
    """`ipc.<mechanism>.<kind>` for each mechanism asked for (binder only where the kernel has it)."""
    binder_missing = binder_status()
    results = {}
    for m in mechanisms(asked, binder_missing):
        results[m] = run_probe(f"ipc.{m}.{kind}", options, fmt)
        _say(results[m].messages)
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
    min_payload: Annotated[str, typer.Option("--min-payload")] = "4",
    max_payload: Annotated[str, typer.Option("--max-payload")] = "64k",
    spin_us: SpinUs = 0,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table or json")] = "table",
) -> None:
    """Synchronous request/reply at payloads 4 B..64 KiB over each mechanism (Android's binder throughput test)."""
    _check_format(fmt, ("table", "json"))
    options = {
        "placement": placement,
        "iterations": iterations,
        "min-payload": min_payload,
        "max-payload": max_payload,
        "spin-us": spin_us,
    }
    docs = {m: result.document for m, result in _run_each("throughput", mechanism, options, "json").items()}
    if fmt == "json":
        out.file.write(json.dumps(docs, indent=2) + "\n")
        return
    table = Table(title=f"IPC throughput ({placement}): time per transaction, payload bytes per second", title_justify="left")
    table.add_column("payload", justify="right")
    for m in docs:
        table.add_column(m, justify="right")
    rows: dict[str, list[str]] = {}
    for doc in docs.values():
        for entry in doc["benchmarks"]:
            size = entry["name"].rsplit("/", 1)[1]
            rows.setdefault(size, []).append(f"{entry['real_time'] / 1000:.1f} µs\n{entry['bytes_per_second'] / 1e6:.2f} MB/s")
    for size, cells in rows.items():
        table.add_row(size, *cells)
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
    pair: Annotated[int, typer.Option("--pair", help="client/server process pairs at once")] = 1,
    deadline_us: Annotated[int, typer.Option("--deadline-us", help="a transaction slower than this misses")] = 2500,
    placement: Placement = "unpinned",
    spin_us: SpinUs = 0,
    payload: Annotated[int, typer.Option("--payload", help="bytes per message (16-byte header included)")] = 32,
    fifo_priority: Annotated[int, typer.Option("--fifo-priority", help="the real-time caller's priority")] = 1,
    inheritance: Annotated[str, typer.Option("--inheritance", help="pi, plain or off: the lock of the inheritance check")] = "pi",
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="every process's pid, tid, CPU and policy")] = False,
    trace: Annotated[bool, typer.Option("--trace", help="trace_marker and stop tracing on the first miss")] = False,
    force: Annotated[bool, typer.Option("--force", help="allow more pairs than CPUs")] = False,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table, android (the Android test's JSON) or json")] = "table",
) -> None:
    """Client/server pairs, one SCHED_OTHER and one SCHED_FIFO call per iteration, against a deadline (binder latency test)."""
    _check_format(fmt, ("table", "android", "json"))
    options = {
        "iterations": iterations, "pair": pair, "deadline-us": deadline_us, "placement": placement, "spin-us": spin_us,
        "payload": payload, "fifo-priority": fifo_priority, "inheritance": inheritance, "verbose": verbose,
        "trace": trace, "force": force,
    }  # fmt: skip
    results = _run_each("latency", mechanism, options, "json" if fmt == "json" else "android")
    docs = {m: result.document for m, result in results.items()}
    findings = [line.split(FINDING, 1)[1] for r in results.values() for line in r.messages if FINDING in line]
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
    verdicts = ", ".join(sorted({doc["inheritance"] for doc in docs.values()}))
    out.print(
        f"priority inheritance ({inheritance} lock): {verdicts}" + (f" ({findings[0].split(': ', 1)[1]})" if findings else "")
    )


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="A quick look at IPC mechanisms (binder's throughput and latency tests).", no_args_is_help=True)
    group.command()(throughput)
    group.command()(latency)
    app.add_typer(group, name="ipc")
