"""A retried run replaces the failure it repeats, never a run stored as ok, and keeps the last
failures before it (bounded, so that its details stay within what a bundle takes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchlab.errors import StoreError
from benchlab.metrics import Metric
from benchlab.store import NewRun, Store
from benchlab.store.runs import ATTEMPT_MESSAGE, ATTEMPTS_KEPT
from tests.conftest import experiment_rows


def test_retries_replace_failures_keep_the_last_of_them_and_never_touch_an_ok_run(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "r.db"))
    exp = store.create_experiment(
        **experiment_rows({"name": "retry", "workloads": [{"name": "w", "command": ["true"]}], "variants": [{"name": "a"}]})
    )
    run: dict[str, Any] = {"host_id": store.host_id({"hostname": "h"}), "workload": "w", "variant": "a", "block": 0,
                           "warmup": False, "position": 0}  # fmt: skip
    tries = ATTEMPTS_KEPT + 2
    for i in range(tries):
        message = f"try {i} " + "x" * 2 * ATTEMPT_MESSAGE
        store.record_run(
            exp, NewRun(**run, status="failed", exit_code=1, message=message, started_at=i, ended_at=i + 0.5), retry=True
        )
    store.record_run(
        exp, NewRun(**run, status="ok", started_at=99, ended_at=100, metrics=[Metric("wall", 1.0, "s", "lower")]), retry=True
    )
    (record,) = store.load(exp, every_record=True).records
    assert record.status == "ok" and record.details is not None
    attempts = record.details["earlier_attempts"]
    assert [a["started_at"] for a in attempts] == list(range(tries - ATTEMPTS_KEPT, tries))  # the last ones, oldest first
    assert all(len(a["message"]) == ATTEMPT_MESSAGE and a["status"] == "failed" and a["exit_code"] == 1 for a in attempts)
    with pytest.raises(StoreError, match="never stored twice"):  # an ok run is never replaced
        store.record_run(exp, NewRun(**run, status="failed", started_at=101, ended_at=102), retry=True)
