"""Persistence: SQLAlchemy 2 Core tables, repositories and Alembic migrations.

SQLite (WAL) by default, PostgreSQL for scale; the same code and migrations serve both.
"""
