"""The schema release 0.1.0 shipped (schema_version 1), written out as it was.

Every database written before alembic has `schema_version` 1 and no `alembic_version`, but not
the same tables: main held schema_version 1 from 2026-11-22 to 11-24 while it gained
`metric_name` (metric rows carried their name, unit and direction before), `run_detail` and
`calibration`. So this revision trusts no number: it creates each table the database lacks and
moves inline metric names into `metric_name`, and every later revision likewise does only what
the database still lacks (`benchlab.store.migrate` runs them all from the start on any database
that is not whole). The tables are spelled out rather than taken from `schema.py`, which moves
on with every later revision.
"""

import sqlalchemy as sa
from alembic import op

revision = "0001_baseline"
down_revision = None


def upgrade() -> None:
    have = set(sa.inspect(op.get_bind()).get_table_names())

    def create_table(name: str, *columns: sa.schema.SchemaItem) -> None:
        if name not in have:
            op.create_table(name, *columns)

    create_table("schema_version", sa.Column("version", sa.Integer, nullable=False))
    if op.get_bind().execute(sa.text("SELECT count(*) FROM schema_version")).scalar() == 0:
        op.execute("INSERT INTO schema_version (version) VALUES (1)")
    create_table(
        "host",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("hash", sa.String(64), nullable=False, unique=True),
        sa.Column("fingerprint", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    create_table(
        "experiment",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(100), nullable=False, unique=True),
        sa.Column("spec", sa.Text, nullable=False),
        sa.Column("spec_hash", sa.String(64), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    create_table(
        "workload",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("experiment_id", sa.Integer, sa.ForeignKey("experiment.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("version", sa.Text, nullable=False),
        sa.UniqueConstraint("experiment_id", "name"),
    )
    create_table(
        "variant",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("experiment_id", sa.Integer, sa.ForeignKey("experiment.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("config", sa.Text, nullable=False),
        sa.Column("is_baseline", sa.Boolean, nullable=False),
        sa.UniqueConstraint("experiment_id", "name"),
    )
    create_table(
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
    create_table(
        "metric_name",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("workload_id", sa.Integer, sa.ForeignKey("workload.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("unit", sa.String(20), nullable=False),
        sa.Column("direction", sa.String(6), nullable=False),
        sa.UniqueConstraint("workload_id", "name"),
    )
    create_table(
        "metric",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("run.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name_id", sa.Integer, sa.ForeignKey("metric_name.id", ondelete="CASCADE"), nullable=False),
        sa.Column("value", sa.Float, nullable=False),
    )
    if "metric" not in have:
        op.create_index("metric_by_run", "metric", ["run_id"])
    elif "metric_name" not in have:
        _name_metrics_once()
    create_table(
        "run_detail",
        sa.Column("run_id", sa.Integer, sa.ForeignKey("run.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("details", sa.Text, nullable=False),
    )
    create_table(
        "bundle_import",
        sa.Column("bundle_id", sa.String(36), primary_key=True),
        sa.Column("experiment_id", sa.Integer, sa.ForeignKey("experiment.id", ondelete="CASCADE"), nullable=False),
        sa.Column("imported_at", sa.Float, nullable=False),
    )
    create_table(
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


def _name_metrics_once() -> None:
    """Metric rows written before 2026-11-22 22:42 carry their name, unit and direction: each
    (workload, name) becomes one metric_name row (its first unit and direction, which one
    workload's runs never varied) and the rows point at it, as the table is copied."""
    op.execute(
        "INSERT INTO metric_name (workload_id, name, unit, direction) "
        "SELECT run.workload_id, metric.name, MIN(metric.unit), MIN(metric.direction) "
        "FROM metric JOIN run ON run.id = metric.run_id GROUP BY run.workload_id, metric.name"
    )
    op.add_column("metric", sa.Column("name_id", sa.Integer))
    op.execute(
        "UPDATE metric SET name_id = (SELECT metric_name.id FROM metric_name JOIN run "
        "ON run.workload_id = metric_name.workload_id WHERE run.id = metric.run_id AND metric_name.name = metric.name)"
    )
    with op.batch_alter_table("metric") as batch:
        for column in ("name", "unit", "direction"):
            batch.drop_column(column)
        batch.alter_column("name_id", existing_type=sa.Integer, nullable=False)
        batch.create_foreign_key("metric_name_id", "metric_name", ["name_id"], ["id"], ondelete="CASCADE")
