"""Alembic environment: runs on the connection handed over by ``store.migrate``."""

from alembic import context
from sqlalchemy import create_engine

from tickethub.store.tables import metadata

config = context.config
connection = config.attributes.get("connection")

if connection is None:  # `alembic` CLI use, e.g. autogenerate during development
    url = config.get_main_option("sqlalchemy.url") or "sqlite:///data/tickethub.db"
    connection = create_engine(url).connect()

context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
