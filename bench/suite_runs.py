"""Runs every CPU-suite workload single-core as an interleaved benchlab experiment and
returns its throughput samples; shared by the baseline and noise scripts."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from benchlab.analysis.analyze import build_series
from benchlab.runner import Prepared, Runner
from benchlab.spec.validate import spec_from_dict
from benchlab.store import Store
from benchlab.workloads.probe import catalogue


def suite_tasks() -> dict[str, dict[str, Any]]:
    """The probe's suite workloads (from the probe itself, not the baseline file, which this may rebuild)."""
    return {name: info for name, info in catalogue().items() if info.get("section")}


def single_core_samples(blocks: int, warmup: int = 1) -> dict[str, list[float]]:
    spec = spec_from_dict(
        {
            "name": "suite-samples",
            "workloads": [{"name": name, "builtin": name, "options": {"threads": 1}} for name in suite_tasks()],
            "variants": [{"name": "only"}],
            "blocks": blocks,
            "warmup": warmup,
        }
    )
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["BENCHLAB_STATE_DIR"] = tmp
        store = Store(str(Path(tmp) / "samples.db"))
        exp = Runner(store).run(Prepared.from_spec(spec))
        series, _ = build_series(store.load(exp))
    return {s.workload: s.of("only")[1].tolist() for s in series if s.metric == "items_per_second"}
