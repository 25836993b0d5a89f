"""Runs inside `perf script -s` (perf's own Python), never imported by benchlab: folds a profiled
run's samples into stacks and writes them as JSON to the path in BENCHLAB_STACKS.

perf hands each sample to `process_event` as a dict (its callchain as a list of dicts with `ip`,
`sym` and `dso`), which is why benchlab reads perf's data through this hook rather than parsing
`perf script`'s text, whose columns change between versions, or its JSON export, which drops the
library of every frame without a symbol (a stripped program's). Only the standard library: it runs
in whatever Python perf was built with.

The document (`benchlab.stacks.StackDocument` reads it): `event` as perf names the event it
sampled (a machine without hardware counters records `cpu-clock` when asked for cycles),
`frames` as [symbol or null, library or null, kernel?], `stacks` as [process name, frame indices
from the root, summed sample periods, samples].
"""

from __future__ import annotations

import json
import os
from typing import Any

KERNEL_HALF = 1 << 63  # x86-64 and arm64 map the kernel in the upper half of the address space

frames: dict[tuple[str | None, str | None, bool], int] = {}  # (symbol, dso, kernel) -> index
stacks: dict[tuple[str, tuple[int, ...]], list[int]] = {}  # (comm, frame indices root first) -> [period, samples]
events: dict[str, int] = {}  # event name -> samples


def _frame(entry: dict[str, Any]) -> int:
    sym = entry.get("sym")
    key = (sym.get("name") if sym else None, entry.get("dso"), entry.get("ip", 0) >= KERNEL_HALF)
    index = frames.get(key)
    if index is None:
        index = frames[key] = len(frames)
    return index


def process_event(param: dict[str, Any]) -> None:
    sample = param.get("sample", {})
    chain = param.get("callchain") or [
        {"ip": sample.get("ip", 0), "sym": param.get("symbol") and {"name": param["symbol"]}, "dso": param.get("dso")}
    ]
    path = tuple(_frame(entry) for entry in reversed(chain) if entry.get("ip"))
    slot = stacks.setdefault((param.get("comm", ""), path), [0, 0])
    slot[0] += sample.get("period", 1)
    slot[1] += 1
    name = param.get("ev_name", "")
    events[name] = events.get(name, 0) + 1


def trace_end() -> None:
    document = {
        "event": max(events, key=lambda name: events[name]) if events else "",
        "frames": [list(key) for key in frames],
        "stacks": [[comm, list(path), period, count] for (comm, path), (period, count) in stacks.items()],
    }
    with open(os.environ["BENCHLAB_STACKS"], "w") as out:
        json.dump(document, out)
