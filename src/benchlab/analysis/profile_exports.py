"""A stored experiment's profiles in speedscope's file format (`benchlab explain --speedscope
FILE`), a profile per workload and variant (https://www.speedscope.app/file-format-schema.json),
written from the stored stacks as perf recorded them; the folded stacks other flame graph tools
read are `stacks.folded`."""

from __future__ import annotations

from typing import Any

from benchlab import __version__
from benchlab.analysis.profiles import Profiled
from benchlab.stacks import function_of

SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def speedscope_document(name: str, profiles: dict[tuple[str, str], list[Profiled]]) -> dict[str, Any]:
    """One speedscope document: a sampled profile per (workload, variant), its samples the stacks
    and its weights their time (seconds, or the sampled event's count)."""
    frames: list[dict[str, str]] = []
    index: dict[tuple[str, str | None], int] = {}

    def frame(label: str, library: str | None) -> int:
        key = (label, library)
        if key not in index:
            index[key] = len(frames)
            frames.append({"name": label, **({"file": library} if library else {})})
        return index[key]

    out = []
    for (workload, variant), runs in profiles.items():
        samples: list[list[int]] = []
        weights: list[float] = []
        for p in runs:
            functions = [function_of(*f) for f in p.document.frames]
            for comm, path, period, _ in p.document.stacks:
                samples.append(
                    [frame(comm or "[unknown]", None), *(frame(functions[i].name, functions[i].library) for i in path)]
                )
                weights.append(period * p.document.scale)
        unit = "seconds" if runs and runs[0].costs.unit == "s" else "none"
        out.append({
            "type": "sampled", "name": f"{workload}: {variant} ({len(runs)} profiled runs)", "unit": unit,
            "startValue": 0, "endValue": sum(weights), "samples": samples, "weights": weights,
        })  # fmt: skip
    return {
        "$schema": SPEEDSCOPE_SCHEMA, "name": name, "exporter": f"benchlab {__version__}", "activeProfileIndex": 0,
        "shared": {"frames": frames}, "profiles": out,
    }  # fmt: skip
