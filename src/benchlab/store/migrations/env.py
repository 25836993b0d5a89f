"""Alembic's entry point: migrations always run on the connection benchlab hands over (see
`benchlab.store.migrate`), inside its transaction, never from an alembic.ini."""

from alembic import context

from benchlab.store.schema import metadata

context.configure(
    connection=context.config.attributes["connection"],
    target_metadata=metadata,
    render_as_batch=True,  # SQLite alters a table by copying it: see versions/0002
)
with context.begin_transaction():
    context.run_migrations()
