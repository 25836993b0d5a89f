"""profile_run: the profiled runs of an experiment (a workload's `profile`), each with its stacks.
A new table: older rows are untouched. schema_version becomes 4, which earlier releases refuse
instead of dropping a table they do not know when they copy one. A table the database holds
already is kept.
"""

import sqlalchemy as sa
from alembic import op

revision = "0004_profile_run"
down_revision = "0003_fleet_task"


def upgrade() -> None:
    if "profile_run" not in set(sa.inspect(op.get_bind()).get_table_names()):
        op.create_table(
            "profile_run",
            sa.Column("id", sa.Integer, primary_key=True),
            sa.Column("uuid", sa.String(36), nullable=False, unique=True),
            sa.Column("experiment_id", sa.Integer, sa.ForeignKey("experiment.id", ondelete="CASCADE"), nullable=False),
            sa.Column("workload_id", sa.Integer, sa.ForeignKey("workload.id", ondelete="CASCADE"), nullable=False),
            sa.Column("variant_id", sa.Integer, sa.ForeignKey("variant.id", ondelete="CASCADE"), nullable=False),
            sa.Column("host_id", sa.Integer, sa.ForeignKey("host.id"), nullable=False),
            sa.Column("block", sa.Integer, nullable=False),
            sa.Column("position", sa.Integer, nullable=False),
            sa.Column("status", sa.String(10), nullable=False),
            sa.Column("started_at", sa.Float, nullable=False),
            sa.Column("ended_at", sa.Float, nullable=False),
            sa.Column("wall_s", sa.Float),
            sa.Column("message", sa.Text),
            sa.Column("profile", sa.LargeBinary),
            sa.UniqueConstraint("experiment_id", "host_id", "workload_id", "variant_id", "block", name="profile_once"),
        )
    op.execute("UPDATE schema_version SET version = 4")
