"""What `benchlab run --fleet` does beside a run here: the target checked before anything is
stored, and the driver's progress over its workers (imported only by a run that names a fleet)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.progress import TextColumn

from benchlab.cli.console import err
from benchlab.cli.progress import print_note, progress_bar
from benchlab.errors import SpecError
from benchlab.report import safe

if TYPE_CHECKING:
    from types import TracebackType

    from benchlab.runner import Prepared
    from benchlab.store import ExperimentRecord, Store
    from benchlab.store.fleet import FleetProgress


def broker_url(url: str | None) -> str:
    from benchlab.fleet.app import check_broker

    return check_broker(url or os.environ.get("BENCHLAB_BROKER"))


def key_of(path: Path | None) -> bytes:
    from benchlab.fleet.envelope import default_key_file, read_key

    path = path or default_key_file()
    if path is None:
        raise SpecError("no fleet key: give --key FILE (or set BENCHLAB_FLEET_KEY)")
    return read_key(path)


class FleetBar:
    """The driver's view of a fleet: runs stored of all, and per worker what it stored and runs now."""

    def __init__(self) -> None:
        self.bar = progress_bar(TextColumn("{task.fields[workers]}", markup=False))
        self.task = self.bar.add_task("runs", total=0, workers="waiting for workers")

    def __enter__(self) -> FleetBar:
        self.bar.start()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.bar.stop()

    def show(self, progress: FleetProgress, total: int) -> None:
        workers = " · ".join(
            f"{name} {runs}" + (f" ({progress.running[name]})" if name in progress.running else "")
            for name, runs in sorted(progress.per_worker.items())
        )
        text = safe.text(workers or "waiting for workers", limit=safe.LINE_MAX)
        self.bar.update(self.task, total=total, completed=min(progress.runs, total), workers=text)

    def note(self, text: str) -> None:
        print_note(self.bar, text)


@dataclass(frozen=True)
class FleetTarget:
    """Where `run --fleet` sends an experiment, checked before anything is stored."""

    pool: str
    broker: str
    key: bytes
    ca_file: Path | None
    consumer_timeout: float

    @classmethod
    def given(
        cls, pool: str | None, broker: str | None, key: Path | None, ca_file: Path | None, consumer_timeout: float | None
    ) -> FleetTarget | None:
        """The target `run --fleet POOL` names, or None for a run here; a fleet's option without
        `--fleet` is refused, never silently ignored (the run would happen here, unasked)."""
        if pool is None:
            stray = [flag for flag, value in (("--broker", broker), ("--key", key), ("--broker-ca", ca_file),
                                               ("--consumer-timeout", consumer_timeout)) if value is not None]  # fmt: skip
            if stray:
                raise SpecError("this option is for a fleet: give --fleet POOL too, or leave it out", where=stray[0])
            return None
        return cls.of(pool, broker, key, ca_file, consumer_timeout)

    @classmethod
    def of(
        cls, pool: str, broker: str | None, key: Path | None, ca_file: Path | None, consumer_timeout: float | None
    ) -> FleetTarget:
        from benchlab.fleet.app import DEFAULT_CONSUMER_TIMEOUT, check_pool

        if consumer_timeout is not None and not (math.isfinite(consumer_timeout) and consumer_timeout > 0):
            raise SpecError(f"{consumer_timeout} is no number of seconds above 0", where="--consumer-timeout")
        return cls(check_pool(pool), broker_url(broker), key_of(key), ca_file, consumer_timeout or DEFAULT_CONSUMER_TIMEOUT)

    def run(self, prepared: Prepared, store: Store, *, resume: bool, retry_failed: bool) -> ExperimentRecord:
        from benchlab.fleet import driver

        warning = driver.consumer_timeout_warning(prepared, self.consumer_timeout)
        if warning:
            err().print(f"warning: {safe.text(warning, limit=safe.LINE_MAX)}", style="yellow", highlight=False)
        with FleetBar() as bar:
            return driver.run_on_fleet(
                prepared,
                store,
                bar,
                pool=self.pool,
                broker=self.broker,
                key=self.key,
                resume=resume,
                retry_failed=retry_failed,
                ca_file=self.ca_file,
            )
