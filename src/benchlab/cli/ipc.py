"""`benchlab ipc throughput|latency`: a quick look at every IPC mechanism on this machine."""

from __future__ import annotations

from benchlab.cli import options
from benchlab.cli.console import err, out
from benchlab.cli.parser import Commands, Parser, count, option, repeated, switch
from benchlab.errors import SpecError
from benchlab.report import safe

TYPE_CHECKING = False  # typing's flag without importing typing (3 ms of every start); mypy reads it alike
if TYPE_CHECKING:
    from typing import Any

    from benchlab.ipc import ProbeOutput


def _shared_options(parser: Parser) -> None:
    """What both tests take: the mechanisms, where the ends run, spinning and the environment."""
    repeated(parser, "--mechanism", "-m", help="pipe, unix, seqpacket, eventfd, futex, binder or all (repeatable)")
    option(parser, "--placement", default="unpinned", help="unpinned, same (one CPU for both ends) or different")
    count(parser, "--spin-us", default=0, help="spin this long before each blocking receive (0: block)")
    option(
        parser, "--environment", "-e", default="local",
        help="local, or vm followed by the vm's fields as key=value words: 'vm kernel=6.1.0-56 memory=2G' "
        "(a guest booted for these runs; binder's module loaded where its kernel has it)",
    )  # fmt: skip


def _say(workload: str, result: ProbeOutput) -> None:
    """The probe's lines for people (the verbose ones) as they came, then its notes; the
    inheritance result is summed up once after the table."""
    for line in result.stderr.splitlines():
        err().print(safe.text(line, limit=safe.LINE_MAX), highlight=False, soft_wrap=True)
    for note in result.said.notes:
        err().print(safe.text(f"{workload}: {note.text}", limit=safe.LINE_MAX), highlight=False, soft_wrap=True)


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
            err().print(safe.text(f"guest {executor.guest.release}: {EMULATED}", limit=safe.LINE_MAX), soft_wrap=True)
    finally:
        if executor is not None:
            executor.close()
    if binder_missing and (not asked or {"all", "binder"} & set(asked)):
        err().print(safe.text(binder_missing, limit=safe.LINE_MAX), soft_wrap=True)
    return results


def _check_format(fmt: str, allowed: tuple[str, ...]) -> None:
    if fmt not in allowed:
        raise SpecError(f"--format {fmt}: use one of {', '.join(allowed)}")


def throughput(
    *,
    mechanism: list[str],
    placement: str,
    iterations: int,
    min_payload: str,
    max_payload: str,
    spin_us: int,
    fmt: str,
    environment: str,
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
        import json

        out().file.write(json.dumps(docs, indent=2) + "\n")
        return
    from rich.table import Table

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
    out().print(table)


def _half_row(mech: str, half: str, group: dict[str, Any]) -> list[str]:
    times = group[f"{half}_ms"]
    if "skipped" in times:
        return [mech, half, times["skipped"], *[""] * 8]
    micros = [f"{times[key] * 1000:.1f}" for key in ("bst", "avg", "p50", "p99", "p99.9", "wst")]
    same_cpu = f"{group['S']}/{group['I']}" if half == "other" else ""  # Android counts both halves together
    return [mech, half, *micros, str(times["miss"]), f"{times['meetR']:.3f}", same_cpu]


def latency(
    *,
    mechanism: list[str],
    iterations: int,
    pair: int,
    deadline_us: int,
    placement: str,
    spin_us: int,
    payload: int,
    fifo_priority: int,
    inheritance: str,
    verbose: bool,
    trace: bool,
    force: bool,
    fmt: str,
    environment: str,
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
        import json

        out().file.write(json.dumps(next(iter(docs.values())) if len(docs) == 1 else docs, indent=2) + "\n")
        return
    from rich import box
    from rich.table import Table

    title = f"IPC latency in µs ({pair} pair(s), {placement}, deadline {deadline_us} µs)"
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    header = ("mechanism", "caller", "best", "avg", "p50", "p99", "p99.9", "worst", "miss", "meetR", "S/I")
    rows = [_half_row(m, half, doc["ALL"]) for m, doc in docs.items() for half in ("other", "fifo")]
    for i, col in enumerate(header):
        width = max(len(col), *(len(row[i]) for row in rows))  # never squeezed into an ellipsis
        table.add_column(col, justify="left" if i < 2 else "right", min_width=width, no_wrap=True)
    for row in rows:
        table.add_row(*row)
    out().print(table)
    checks = [r.said.inheritance for r in results.values() if r.said.inheritance is not None]
    verdicts = ", ".join(sorted({check.verdict for check in checks})) or "OFF"
    out().print(f"priority inheritance ({inheritance} lock): {verdicts}" + (f" ({checks[0].text})" if checks else ""))


def register(commands: Commands) -> None:
    commands.group("ipc", "A quick look at IPC mechanisms (binder's throughput and latency tests).", _commands)


def _commands(group: Commands) -> None:
    group.command("throughput", throughput, _throughput_options)
    group.command("latency", latency, _latency_options)


def _throughput_options(parser: Parser) -> None:
    _shared_options(parser)
    count(parser, "--iterations", "-i", default=2000, help="timed transactions per payload")
    option(parser, "--min-payload", default="4", help="the smallest payload in bytes (4, 1k, 64k)")
    option(parser, "--max-payload", default="64k", help="the largest payload: from the smallest, doubling up to it")
    options.report_format(parser, help="table or json")


def _latency_options(parser: Parser) -> None:
    """The Android latency test's own flags (`-pair 2`, `-deadline_us 500`, `-trace`) are taken
    too, since the study's users type them; `-i` and `-v` are short flags already."""
    _shared_options(parser)
    count(parser, "--iterations", "-i", default=1000, help="iterations per pair")
    count(parser, "--pair", "-pair", default=1, help="client/server process pairs at once")
    count(parser, "--deadline-us", "-deadline_us", default=2500, help="a transaction slower than this misses")
    count(parser, "--payload", default=32, help="bytes per message (16-byte header included)")
    count(parser, "--fifo-priority", default=1, help="the real-time caller's priority")
    option(parser, "--inheritance", default="pi", help="pi, plain or off: the lock of the inheritance check")
    switch(parser, "--verbose", "-v", help="every process's pid, tid, CPU and policy")
    switch(parser, "--trace", "-trace", help="trace_marker and stop tracing on the first miss")
    switch(parser, "--force", help="allow more pairs than CPUs")
    options.report_format(parser, help="table, android (the Android test's JSON) or json")
