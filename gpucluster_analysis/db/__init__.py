"""The DuckDB store: opening it and keeping its schema current."""

from gpucluster_analysis.db.connect import open_store, store_is_empty

__all__ = ["open_store", "store_is_empty"]
