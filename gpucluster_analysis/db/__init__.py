"""The DuckDB store: opening it and keeping its schema current."""

from gpucluster_analysis.db.connect import open_memory, open_store, store_is_empty, upgrade_older_store

__all__ = ["open_memory", "open_store", "store_is_empty", "upgrade_older_store"]
