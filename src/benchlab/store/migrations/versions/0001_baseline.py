"""The schema release 0.1.0 shipped (schema_version 1), written out as it was.

A 0.1.0 database has `schema_version` and no `alembic_version`: it is stamped with this
revision and upgraded from here. The tables are spelled out rather than taken from
`schema.py`, which moves on with every later revision.
"""

import sqlalchemy as sa
from alembic import op

revision = "0001_baseline"
down_revision = None


def upgrade() -> None:
    op.create_table("schema_version", sa.Column("version", sa.Integer, nullable=False))
    op.execute("INSERT INTO schema_version (version) VALUES (1)")
    op.create_table(
        "host",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("hash", sa.String(64), nullable=False, unique=True),
        sa.Column("fingerprint", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_table(
        "experiment",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(100), nullable=False, unique=True),
        sa.Column("spec", sa.Text, nullable=False),
        sa.Column("spec_hash", sa.String(64), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_table(
        "workload",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("experiment_id", sa.Integer, sa.ForeignKey("experiment.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("version", sa.Text, nullable=False),
        sa.UniqueConstraint("experiment_id", "name"),
    )
    op.create_table(
        "variant",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("experiment_id", sa.Integer, sa.ForeignKey("experiment.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("config", sa.Text, nullable=False),
        sa.Column("is_baseline", sa.Boolean, nullable=False),
        sa.UniqueConstraint("experiment_id", "name"),
    )
    op.create_table(
        "run",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=False, unique=True),
        sa.Column("experiment_id", sa.Integer, sa.ForeignKey("experiment.id", ondelete="CASCADE"), nullable=False),
        sa.Column("workload_id", sa.Integer, sa.ForeignKey("workload.id", ondelete="CASCADE"), nullable=False),
        sa.Column("variant_id", sa.Integer, sa.ForeignKey("variant.id", ondelete="CASCADE"), nullable=False),
        sa.Column("host_id", sa.Integer, sa.ForeignKey("host.id"), nullable=False),
        sa.Column("block", sa.Integer, nullable=False),
        sa.Column("warmup", sa.Boolean, nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("attempt", sa.Integer, nullable=False),
        sa.Column("status", sa.String(10), nullable=False),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("ended_at", sa.Float, nullable=False),
        sa.Column("exit_code", sa.Integer),
        sa.Column("message", sa.Text),
        sa.Column("stderr_tail", sa.Text),
        sa.Column("workload_version", sa.Text, nullable=False),
        sa.UniqueConstraint("experiment_id", "host_id", "workload_id", "variant_id", "block", "warmup", name="run_once"),
    )
    op.create_table(
        "metric_name",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("workload_id", sa.Integer, sa.ForeignKey("workload.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("unit", sa.String(20), nullable=False),
        sa.Column("direction", sa.String(6), nullable=False),
        sa.UniqueConstraint("workload_id", "name"),
    )
    op.create_table(
        "metric",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("run.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name_id", sa.Integer, sa.ForeignKey("metric_name.id", ondelete="CASCADE"), nullable=False),
        sa.Column("value", sa.Float, nullable=False),
    )
    op.create_index("metric_by_run", "metric", ["run_id"])
    op.create_table(
        "run_detail",
        sa.Column("run_id", sa.Integer, sa.ForeignKey("run.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("details", sa.Text, nullable=False),
    )
    op.create_table(
        "bundle_import",
        sa.Column("bundle_id", sa.String(36), primary_key=True),
        sa.Column("experiment_id", sa.Integer, sa.ForeignKey("experiment.id", ondelete="CASCADE"), nullable=False),
        sa.Column("imported_at", sa.Float, nullable=False),
    )
    op.create_table(
        "calibration",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("host_id", sa.Integer, sa.ForeignKey("host.id"), nullable=False),
        sa.Column("workload_version", sa.Text, nullable=False),
        sa.Column("metric", sa.String(200), nullable=False),
        sa.Column("spread", sa.Float),
        sa.Column("experiments", sa.Integer, nullable=False),
        sa.Column("false_verdicts", sa.Integer, nullable=False),
        sa.Column("blocks", sa.Integer, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
