"""Runs inside `perf script -s` (perf's own Python): folds a profiled run's samples into stacks
and writes them as JSON to the path in BENCHLAB_STACKS. benchlab imports only `event_name` from
it (the sampler reads perf stat's event names as this reads perf record's).

perf hands each sample to `process_event` as a dict (its callchain as a list of dicts with `ip`,
`sym` and `dso`), which is why benchlab reads perf's data through this hook rather than parsing
`perf script`'s text, whose columns change between versions, or its JSON export, which drops the
library of every frame without a symbol (a stripped program's). Only the standard library: it runs
in whatever Python perf was built with.

The document (`benchlab.stacks.StackDocument` reads it): `event` as perf names the event it
sampled (a machine without hardware counters records `cpu-clock` when asked for cycles),
`frames` as [symbol or null, library or null, kernel?], `stacks` as [process name, frame indices
from the root, summed sample periods, samples], and `off_cpu` (where `sched:sched_switch` and
switch events were recorded) as [process name, frame indices, nanoseconds off the CPU, times].

A frame without a symbol (a stripped program or library) is named by its library and address,
`[libfoo.so]+0x1194`, where the mapping it ran from is known: perf gives the start of the
sampled instruction's mapping with each sample, learnt here per process and library, and the
executable segment's address is read from the file's ELF program headers, so the address is the
one `addr2line` and `objdump` take, the same in every run whatever ASLR did. Where neither is
known (the library never sampled at its leaf, no file), the frame is the library alone.

Off-CPU time: a thread's `sched_switch` tracepoint (perf hands tracepoints to `trace_unhandled`,
with their fields and the stack) is its switch out, at that stack; its next switch in (a
PERF_RECORD_SWITCH, handed to `context_switch`) ends the wait. The time between is the stack's.
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any

KERNEL_HALF = 1 << 63  # x86-64 and arm64 map the kernel in the upper half of the address space
PAGE = 4096

frames: dict[tuple[str | None, str | None, bool], int] = {}  # (symbol, dso, kernel) -> index
stacks: dict[tuple[str, tuple[int, ...]], list[int]] = {}  # (comm, frame indices root first) -> [period, samples]
events: dict[str, int] = {}  # event name -> samples
off_cpu: dict[tuple[str, tuple[int, ...]], list[int]] = {}  # (comm, frame indices) -> [nanoseconds, times]
switched_out: dict[int, tuple[int, str, tuple[int, ...]]] = {}  # thread -> (when, comm, frame indices)
mapped: dict[tuple[int, str], int] = {}  # (process, library) -> where its executable mapping starts
segments: dict[str, int | None] = {}  # library -> its executable segment's page-aligned address, if readable


def _executable_segment(path: str) -> int | None:
    """The page-aligned virtual address of a 64-bit ELF file's first executable PT_LOAD segment:
    where the loader maps the segment that perf's mapping start is the start of."""
    try:
        with open(path, "rb") as elf:
            header = elf.read(64)
            if len(header) < 64 or header[:4] != b"\x7fELF" or header[4] != 2:
                return None
            order = "<" if header[5] == 1 else ">"
            (table,) = struct.unpack_from(order + "Q", header, 0x20)
            size, count = struct.unpack_from(order + "HH", header, 0x36)
            elf.seek(table)
            entries = elf.read(size * count)
        for i in range(count):
            kind, flags, _, address = struct.unpack_from(order + "IIQQ", entries, i * size)
            if kind == 1 and flags & 1:  # PT_LOAD, PF_X
                return int(address) & ~(PAGE - 1)
    except (OSError, struct.error):
        return None
    return None


def _address(pid: int, entry: dict[str, Any]) -> str | None:
    """`[library]+0x...` for a frame without a symbol, where its mapping and file are known."""
    dso, ip = entry.get("dso"), entry.get("ip", 0)
    if not isinstance(dso, str) or ip >= KERNEL_HALF:
        return None
    start = mapped.get((pid, dso))
    if start is None or ip < start:
        return None
    if dso not in segments:
        segments[dso] = _executable_segment(dso)
    segment = segments[dso]
    return None if segment is None else f"[{os.path.basename(dso)}]+{ip - start + segment:#x}"


def _frame(entry: dict[str, Any], pid: int = -1) -> int:
    sym = entry.get("sym")
    key = (sym.get("name") if sym else _address(pid, entry), entry.get("dso"), entry.get("ip", 0) >= KERNEL_HALF)
    index = frames.get(key)
    if index is None:
        index = frames[key] = len(frames)
    return index


def event_name(name: str) -> str:
    """An event as benchlab names it: `cpu-clock/freq=999/` (as the sampler asks for it with
    off-CPU time) is `cpu-clock`, `cpu_core/cycles/` (one PMU of a hybrid CPU's) is `cycles`.
    The sampler imports it to read perf stat's names the same way."""
    parts = name.split("/")
    if len(parts) == 3 and not parts[2]:
        return parts[0] if "=" in parts[1] else parts[1]
    return name


def process_event(param: dict[str, Any]) -> None:
    sample = param.get("sample", {})
    chain = param.get("callchain") or [
        {"ip": sample.get("ip", 0), "sym": param.get("symbol") and {"name": param["symbol"]}, "dso": param.get("dso")}
    ]
    pid = int(sample.get("pid", -1))
    if param.get("dso") and "dso_map_start" in param:
        mapped[(pid, param["dso"])] = int(param["dso_map_start"])
    path = tuple(_frame(entry, pid) for entry in reversed(chain) if entry.get("ip"))
    slot = stacks.setdefault((param.get("comm", ""), path), [0, 0])
    slot[0] += sample.get("period", 1)
    slot[1] += 1
    name = event_name(param.get("ev_name", ""))
    events[name] = events.get(name, 0) + 1


def trace_unhandled(event: str, context: object, fields: dict[str, Any], *sample: object) -> None:
    if not event.endswith("sched_switch") or not fields.get("prev_pid"):
        return  # another tracepoint, or an idle CPU's swapper (pid 0) switching out
    chain = fields.get("common_callchain") or []
    path = tuple(_frame(entry) for entry in reversed(chain) if entry.get("ip"))
    when = int(fields.get("common_s", 0)) * 1_000_000_000 + int(fields.get("common_ns", 0))
    comm = fields.get("prev_comm") or fields.get("common_comm") or ""
    switched_out[int(fields.get("prev_pid", -1))] = (when, comm if isinstance(comm, str) else str(comm), path)


def context_switch(ts: int, cpu: int, pid: int, tid: int, *rest: object) -> None:
    """A switch of a thread out of or back onto a CPU: perf passes (ts, cpu, pid, tid, np_pid,
    np_tid, machine_pid, out, out_preempt, ...), more in later versions."""
    if rest[3]:  # out
        return
    begun = switched_out.pop(tid, None)
    if begun is not None and ts > begun[0]:
        slot = off_cpu.setdefault((begun[1], begun[2]), [0, 0])
        slot[0] += ts - begun[0]
        slot[1] += 1


def trace_end() -> None:
    document = {
        "event": max(events, key=lambda name: events[name]) if events else "",
        "frames": [list(key) for key in frames],
        "stacks": [[comm, list(path), period, count] for (comm, path), (period, count) in stacks.items()],
        "off_cpu": [[comm, list(path), waited, count] for (comm, path), (waited, count) in off_cpu.items()],
    }
    with open(os.environ["BENCHLAB_STACKS"], "w") as out:
        json.dump(document, out)
