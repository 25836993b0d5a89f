"""run.attempt goes: nothing ever wrote anything but 1 (a run is stored once under its key,
`run_once`, failed or not, and never tried again), so it told nothing.

SQLite drops a column by copying the table (alembic's batch mode); `benchlab.store.migrate`
turns foreign keys off around it, or dropping the old `run` would cascade into `metric`.
schema_version becomes 2, which release 0.1.0 refuses instead of writing runs without the
column it expects. A database without the column (one stamped at an older revision than it
holds) keeps its table.
"""

import sqlalchemy as sa
from alembic import op

revision = "0002_drop_run_attempt"
down_revision = "0001_baseline"


def upgrade() -> None:
    if "attempt" in {column["name"] for column in sa.inspect(op.get_bind()).get_columns("run")}:
        with op.batch_alter_table("run") as batch:
            batch.drop_column("attempt")
    op.execute("UPDATE schema_version SET version = 2")
