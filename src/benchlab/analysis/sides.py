"""The two sides of `benchlab diff A B`: each argument resolved to stored results.

An argument is one of
  * `NAME` or `NAME:VARIANT`: an experiment in the results database (one variant of it);
  * `PATH` or `PATH:VARIANT`: a bundle written by `benchlab export`, read as it is, never
    imported into the database (it may be another machine's results, looked at once).

The rule where both could be meant: an argument holding `/` is always a path (experiment names
cannot hold one, so `./NAME` names the file `NAME` in this folder); any other argument is the
experiment of that name where one is stored, and only otherwise a file. When both exist the
experiment is read and the report says that the file was not.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from benchlab import report_model as model
from benchlab.errors import SpecError
from benchlab.spec.fields import NAME_PATTERN
from benchlab.store import ExperimentData, Store, bundle_data, read_bundle


@dataclass
class Side:
    """Results read for one side, with the variant named after `:` if one was."""

    label: str  # the argument as given: what the report calls this side
    source: str  # where it was read: the database or the bundle file
    data: ExperimentData
    named_variant: str | None
    last_run: float | None
    notes: list[str] = field(default_factory=list)  # said in the report's warnings

    @property
    def variants(self) -> list[str]:
        return [self.named_variant] if self.named_variant else list(self.data.experiment.variant_ids)

    def described(self, variants: list[str]) -> model.Side:
        """The side as the report records it, counting the runs of `variants` that are samples."""
        runs = self.data.runs
        chosen = np.isin(runs.variant, [runs.variants.index(v) for v in variants])
        samples = int((chosen & runs.ok & ~runs.warmup & runs.current).sum())
        exp = self.data.experiment
        return model.Side(
            label=self.label, source=self.source, experiment=exp.name, variants=variants, runs=samples,
            created_at=exp.created_at, last_run=self.last_run, hosts={str(k): v for k, v in self.data.hosts.items()},
            workload_versions=exp.workload_versions,
        )  # fmt: skip


def resolve(argument: str, database: Callable[[], Store | None]) -> Side:
    """One argument as a side; `database` opens the results database (None where there is none),
    called only for an argument that may name an experiment."""
    if not argument:
        raise SpecError("an empty argument names no experiment and no bundle")
    if "/" in argument:
        return _bundle(argument)
    name, _, variant = argument.partition(":")
    store = database() if re.fullmatch(NAME_PATTERN, name) else None
    exp = store.find_experiment(name) if store is not None else None
    if store is None or exp is None:
        if _file_and_variant(argument)[0].is_file():
            return _bundle(argument)
        where = f"in {store.shown}" if store is not None else "(there is no results database)"
        raise SpecError(
            f"'{argument}' is neither an experiment {where} nor a bundle file",
            hint="`benchlab list` shows the experiments; `benchlab export NAME` writes a bundle",
        )
    last = store.list_experiments(exp.name)[0]["last"]
    side = Side(argument, f"database {store.shown}", store.load(exp), variant or None, last)
    if Path(argument).is_file():
        side.notes.append(f"'{argument}' is an experiment and a file; the experiment was read (write ./{argument} for the file)")
    return _checked_variant(side)


def _file_and_variant(argument: str) -> tuple[Path, str | None]:
    """A path, or a path and the variant after its last `:` where the whole is no file."""
    path = Path(argument)
    head, colon, tail = argument.rpartition(":")
    if not path.is_file() and colon and Path(head).is_file():
        return Path(head), tail
    return path, None


def _bundle(argument: str) -> Side:
    path, variant = _file_and_variant(argument)
    checked = read_bundle(path)
    last = max((r.ended_at for r in checked.bundle.runs), default=None)
    return _checked_variant(Side(argument, f"bundle {path}", bundle_data(checked), variant, last))


def _checked_variant(side: Side) -> Side:
    known = list(side.data.experiment.variant_ids)
    if side.named_variant is not None and side.named_variant not in known:
        raise SpecError(
            f"'{side.label}': experiment '{side.data.experiment.name}' has no variant '{side.named_variant}' "
            f"(it has {', '.join(known)})"
        )
    return side
