"""Storage: one schema for SQLite and PostgreSQL, migrated by alembic; runs committed as they end.

Every name other packages use is imported from here, never from the modules below, which
each do one job: `url` (which database, connection pragmas), `version` and `migrate` (the
schema a database is at, and bringing it to this benchlab's), `hosts` (host identity),
`experiments` and `runs` (writing), `reading` and `columns` (loading), `columnar` (query
results as numpy columns), `driver` (the raw cursor the fast paths use), `bundle` (export
and import), `bundled` (a bundle read as a load, without a database), `store` (the Store tying them).
"""

from benchlab.store.bundle import CheckedBundle, export_bundle, import_bundle, read_bundle
from benchlab.store.bundled import bundle_data
from benchlab.store.experiments import spec_digest
from benchlab.store.hosts import IDENTITY, host_digest
from benchlab.store.records import (
    FAILED_BENCHMARKS,
    Calibration,
    ExperimentData,
    ExperimentRecord,
    MetricColumns,
    NewRun,
    RunRecord,
    RunTable,
)
from benchlab.store.store import Store, revision_of
from benchlab.store.url import default_db
from benchlab.store.version import BASELINE, HEAD, Migration

__all__ = [
    "FAILED_BENCHMARKS",
    "BASELINE",
    "HEAD",
    "IDENTITY",
    "Calibration",
    "CheckedBundle",
    "ExperimentData",
    "ExperimentRecord",
    "MetricColumns",
    "Migration",
    "NewRun",
    "RunRecord",
    "RunTable",
    "Store",
    "bundle_data",
    "default_db",
    "export_bundle",
    "host_digest",
    "import_bundle",
    "read_bundle",
    "revision_of",
    "spec_digest",
]
