"""The one schema, for SQLite and PostgreSQL alike (SQLAlchemy Core).

One row per run, one per metric value (its name, unit and direction in
metric_name); a run is committed the moment it ends. The unique key on run (experiment, host, workload, variant, block,
warm-up) is what makes `--resume` and redelivered fleet tasks unable to store
a run twice; `uuid` makes an imported bundle unable to add a run twice.

This is the schema at the newest migration (`migrations/versions/`): a new database is made
from it, an older one is brought to it by the migrations, and a test checks that both agree.
A change here needs a migration beside it, and SCHEMA_VERSION one higher.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Insert,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from benchlab.store.files import SCHEMA_TABLE

# What `schema_version` holds. Release 0.1.0 knew nothing of alembic and read only this number: it
# refuses any higher one ("newer than this benchlab; upgrade benchlab") instead of writing into a
# database whose columns it does not know, so every migration raises it.
SCHEMA_VERSION = 4

metadata = MetaData()

schema_version = Table(SCHEMA_TABLE, metadata, Column("version", Integer, nullable=False))

host = Table(
    "host",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("hash", String(64), nullable=False, unique=True),
    Column("fingerprint", Text, nullable=False),
    Column("created_at", Float, nullable=False),
)

experiment = Table(
    "experiment",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(100), nullable=False, unique=True),
    Column("spec", Text, nullable=False),
    Column("spec_hash", String(64), nullable=False),
    Column("created_at", Float, nullable=False),
)

workload = Table(
    "workload",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("experiment_id", ForeignKey("experiment.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(100), nullable=False),
    Column("kind", String(20), nullable=False),
    Column("version", Text, nullable=False),
    UniqueConstraint("experiment_id", "name"),
)

variant = Table(
    "variant",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("experiment_id", ForeignKey("experiment.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(100), nullable=False),
    Column("position", Integer, nullable=False),
    Column("config", Text, nullable=False),
    Column("is_baseline", Boolean, nullable=False),
    UniqueConstraint("experiment_id", "name"),
)

run = Table(
    "run",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("uuid", String(36), nullable=False, unique=True),
    Column("experiment_id", ForeignKey("experiment.id", ondelete="CASCADE"), nullable=False),
    Column("workload_id", ForeignKey("workload.id", ondelete="CASCADE"), nullable=False),
    Column("variant_id", ForeignKey("variant.id", ondelete="CASCADE"), nullable=False),
    Column("host_id", ForeignKey("host.id"), nullable=False),
    Column("block", Integer, nullable=False),
    Column("warmup", Boolean, nullable=False),
    Column("position", Integer, nullable=False),
    Column("status", String(10), nullable=False),  # ok | failed | timeout
    Column("started_at", Float, nullable=False),
    Column("ended_at", Float, nullable=False),
    Column("exit_code", Integer),
    Column("message", Text),
    Column("stderr_tail", Text),
    Column("workload_version", Text, nullable=False),
    UniqueConstraint("experiment_id", "host_id", "workload_id", "variant_id", "block", "warmup", name="run_once"),
)

# A metric's name, unit and direction are stored once per workload, and each value row points
# at them: a report on 100,000 runs reads a million values, and reading a name string with
# each one cost more than judging them all.
metric_name = Table(
    "metric_name",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("workload_id", ForeignKey("workload.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(200), nullable=False),
    Column("unit", String(20), nullable=False),
    Column("direction", String(6), nullable=False),
    UniqueConstraint("workload_id", "name"),
)

metric = Table(
    "metric",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("run_id", ForeignKey("run.id", ondelete="CASCADE"), nullable=False),
    Column("name_id", ForeignKey("metric_name.id", ondelete="CASCADE"), nullable=False),
    Column("value", Float, nullable=False),
    Index("metric_by_run", "run_id"),
)

# What a run really ran under, beyond its numbers: the allocator its process mapped and the
# options in force (JSON). A table of its own, so that databases written before it gain it
# untouched.
run_detail = Table(
    "run_detail",
    metadata,
    Column("run_id", ForeignKey("run.id", ondelete="CASCADE"), primary_key=True),
    Column("details", Text, nullable=False),
)

# A profiled run: one more run of a workload and variant in a block, under the sampler. Runs of
# their own kind, in a table of their own, so that no reader of `run` can take one for a sample
# of the workload's metrics (and databases written before it gain it untouched). `profile` is the
# run's stacks, compressed (store/profiles.py); NULL where the run failed.
profile_run = Table(
    "profile_run",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("uuid", String(36), nullable=False, unique=True),
    Column("experiment_id", ForeignKey("experiment.id", ondelete="CASCADE"), nullable=False),
    Column("workload_id", ForeignKey("workload.id", ondelete="CASCADE"), nullable=False),
    Column("variant_id", ForeignKey("variant.id", ondelete="CASCADE"), nullable=False),
    Column("host_id", ForeignKey("host.id"), nullable=False),
    Column("block", Integer, nullable=False),
    Column("position", Integer, nullable=False),
    Column("status", String(10), nullable=False),  # ok | failed | timeout
    Column("started_at", Float, nullable=False),
    Column("ended_at", Float, nullable=False),
    Column("wall_s", Float),  # the profiled run's wall time, sampler included: what profiling costs
    Column("message", Text),
    Column("profile", LargeBinary),
    UniqueConstraint("experiment_id", "host_id", "workload_id", "variant_id", "block", name="profile_once"),
)

# A fleet's task is one block of one workload (`benchlab run --fleet`); each delivery of it to a
# worker is an attempt, numbered per block. The runs themselves stay keyed by `run_once`: an
# attempt says who ran a block and how it ended (done, skipped as already stored, refused), and
# `runs` counts what it stored, for the driver's progress. Operational, not results: bundles
# leave it out.
fleet_task = Table(
    "fleet_task",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("experiment_id", ForeignKey("experiment.id", ondelete="CASCADE"), nullable=False),
    Column("workload_id", ForeignKey("workload.id", ondelete="CASCADE"), nullable=False),
    Column("block", Integer, nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("worker", String(200), nullable=False),
    Column("host_id", ForeignKey("host.id"), nullable=False),
    Column("state", String(10), nullable=False),  # running | done | skipped | refused | failed
    Column("runs", Integer, nullable=False),
    Column("message", Text),
    Column("started_at", Float, nullable=False),
    Column("ended_at", Float),
    UniqueConstraint("experiment_id", "workload_id", "block", "attempt", name="attempt_once"),
)

# The keys a fleet's drivers sign with, each as an HMAC of a fixed text under it (which tells
# nothing of the key): a worker started with another key is refused at once, instead of
# dropping every task of the fleet as forged.
fleet_key = Table(
    "fleet_key",
    metadata,
    Column("check", String(64), primary_key=True),
    Column("created_at", Float, nullable=False),
)

bundle_import = Table(
    "bundle_import",
    metadata,
    Column("bundle_id", String(36), primary_key=True),
    Column("experiment_id", ForeignKey("experiment.id", ondelete="CASCADE"), nullable=False),
    Column("imported_at", Float, nullable=False),
)

# `benchlab calibrate`: per host and workload (its version and options), the run-to-run spread of its first
# primary metric and how many A/A experiments of it came out better or worse. A table of its
# own, so that databases written before it gain it untouched.
calibration = Table(
    "calibration",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("host_id", ForeignKey("host.id"), nullable=False),
    # named workload_version in databases written before its key covered options too
    Column("workload_version", Text, nullable=False, key="workload_key"),
    Column("metric", String(200), nullable=False),
    Column("spread", Float),  # per-run spread: the sd of the A/A log ratios / sqrt(2) (a CV); NULL off the log scale
    Column("experiments", Integer, nullable=False),
    Column("false_verdicts", Integer, nullable=False),  # A/A experiments with any better/worse row
    Column("blocks", Integer, nullable=False),
    Column("created_at", Float, nullable=False),
)


def insert_new(table: Table, dialect: str) -> Insert:
    """An insert that leaves out rows whose unique key is stored already, by another process
    that committed them since this one looked (a fleet's workers registering one host, one
    workload's metric names, one key at once): on PostgreSQL it waits for that transaction and
    keeps its rows; SQLite lets one writer in at a time."""
    from sqlalchemy.dialects import postgresql, sqlite

    return (postgresql.insert if dialect == "postgresql" else sqlite.insert)(table).on_conflict_do_nothing()
