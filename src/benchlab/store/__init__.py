"""Storage: one schema for SQLite and PostgreSQL, migrated by alembic; runs committed as they end.

Every name other packages use is imported from here, never from the modules below, which
each do one job: `url` (which database, connection pragmas), `version` and `migrate` (the
schema a database is at, and bringing it to this benchlab's), `hosts` (host identity),
`experiments` and `runs` (writing), `reading` and `columns` (loading), `columnar` (query
results as numpy columns), `driver` (the raw cursor the fast paths use), `bundle` (export
and import), `bundled` (a bundle read as a load, without a database), `store` (the Store tying them),
`files` (a SQLite file's checks before SQLAlchemy loads, and the refusal of an experiment it does not hold).

The names load with the module that defines them, on first use (PEP 562): a command that only
refuses a name a file does not hold reads it with `files` alone, without SQLAlchemy, numpy or the
spec's models, which the rest of this package brings.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING without typing's import (mypy reads any name so spelled as true)
if TYPE_CHECKING:  # the names as the type checker sees them (each `as` itself: re-exported)
    from benchlab.store.bundle import CheckedBundle as CheckedBundle
    from benchlab.store.bundle import export_bundle as export_bundle
    from benchlab.store.bundle import import_bundle as import_bundle
    from benchlab.store.bundle import read_bundle as read_bundle
    from benchlab.store.bundled import bundle_data as bundle_data
    from benchlab.store.experiments import spec_digest as spec_digest
    from benchlab.store.files import default_db as default_db
    from benchlab.store.hosts import IDENTITY as IDENTITY
    from benchlab.store.hosts import host_digest as host_digest
    from benchlab.store.records import FAILED_BENCHMARKS as FAILED_BENCHMARKS
    from benchlab.store.records import Calibration as Calibration
    from benchlab.store.records import ExperimentData as ExperimentData
    from benchlab.store.records import ExperimentRecord as ExperimentRecord
    from benchlab.store.records import MetricColumns as MetricColumns
    from benchlab.store.records import NewRun as NewRun
    from benchlab.store.records import ProfiledRun as ProfiledRun
    from benchlab.store.records import RunRecord as RunRecord
    from benchlab.store.records import RunTable as RunTable
    from benchlab.store.store import Store as Store
    from benchlab.store.store import revision_of as revision_of
    from benchlab.store.version import BASELINE as BASELINE
    from benchlab.store.version import HEAD as HEAD
    from benchlab.store.version import Migration as Migration

_DEFINED_IN = {
    "CheckedBundle": "bundle", "export_bundle": "bundle", "import_bundle": "bundle", "read_bundle": "bundle",
    "bundle_data": "bundled", "spec_digest": "experiments", "default_db": "files", "IDENTITY": "hosts",
    "host_digest": "hosts", "FAILED_BENCHMARKS": "records", "Calibration": "records", "ExperimentData": "records",
    "ExperimentRecord": "records", "MetricColumns": "records", "NewRun": "records", "ProfiledRun": "records",
    "RunRecord": "records", "RunTable": "records", "Store": "store", "revision_of": "store", "BASELINE": "version",
    "HEAD": "version", "Migration": "version",
}  # fmt: skip

__all__ = sorted(_DEFINED_IN)


def __getattr__(name: str) -> object:
    module = _DEFINED_IN.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
