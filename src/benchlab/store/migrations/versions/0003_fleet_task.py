"""fleet_task: each delivery of a fleet's block to a worker (`benchlab run --fleet`), so the
driver follows who runs what from the database; fleet_key: a check of each key the fleet's
drivers sign with, so a worker with another is refused at start. New tables: older rows are untouched.
schema_version becomes 3, which earlier releases refuse instead of dropping a table they do
not know when they copy one. A table the database holds already is kept.
"""

import sqlalchemy as sa
from alembic import op

revision = "0003_fleet_task"
down_revision = "0002_drop_run_attempt"


def upgrade() -> None:
    have = set(sa.inspect(op.get_bind()).get_table_names())
    if "fleet_task" not in have:
        _fleet_task()
    if "fleet_key" not in have:
        op.create_table(
            "fleet_key",
            sa.Column("check", sa.String(64), primary_key=True),
            sa.Column("created_at", sa.Float, nullable=False),
        )
    op.execute("UPDATE schema_version SET version = 3")


def _fleet_task() -> None:
    op.create_table(
        "fleet_task",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("experiment_id", sa.Integer, sa.ForeignKey("experiment.id", ondelete="CASCADE"), nullable=False),
        sa.Column("workload_id", sa.Integer, sa.ForeignKey("workload.id", ondelete="CASCADE"), nullable=False),
        sa.Column("block", sa.Integer, nullable=False),
        sa.Column("attempt", sa.Integer, nullable=False),
        sa.Column("worker", sa.String(200), nullable=False),
        sa.Column("host_id", sa.Integer, sa.ForeignKey("host.id"), nullable=False),
        sa.Column("state", sa.String(10), nullable=False),
        sa.Column("runs", sa.Integer, nullable=False),
        sa.Column("message", sa.Text),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("ended_at", sa.Float),
        sa.UniqueConstraint("experiment_id", "workload_id", "block", "attempt", name="attempt_once"),
    )
