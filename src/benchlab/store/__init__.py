"""Storage: one schema for SQLite and PostgreSQL; runs committed as they end."""

from benchlab.store.db import ExperimentData, ExperimentRecord, RunRecord, Store, default_db

__all__ = ["ExperimentData", "ExperimentRecord", "RunRecord", "Store", "default_db"]
