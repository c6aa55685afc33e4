"""Running the Alembic migrations that ship inside the package."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine

from tickethub.store import advisory_locks

MIGRATIONS = Path(__file__).with_name("migrations")


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the database at ``engine`` to ``revision`` (default: the newest)."""
    config = alembic_config()
    with engine.begin() as connection:
        # Hubs started together on one database migrate one after another; the later
        # ones find it at head. (SQLite's first DDL statement takes the write lock.)
        advisory_locks.hold_for_transaction(connection, advisory_locks.MIGRATE)
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def downgrade(engine: Engine, revision: str) -> None:
    """Take the database at ``engine`` back to ``revision`` (tests of a migration's data
    step start from the schema before it)."""
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, revision)
