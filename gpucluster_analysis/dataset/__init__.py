"""A store as Parquet: `gca export`, `gca ingest --to` and `gca report --from` (docs/parquet-layout.md)."""

from gpucluster_analysis.dataset.read import open_dataset
from gpucluster_analysis.dataset.write import export_store, write_shard

__all__ = ["export_store", "open_dataset", "write_shard"]
