"""Reading raw cluster logs into the store.

`FORMATS` is the registry of input formats; `ingest_paths` is the entry point.

One sub-package per source family, each module a format (its sniffer, load and FileFormat)
or a piece of one: `slurm/` (sacct, scontrol, squeue, node lists, sacctmgr), `gpu/`
(nvidia-smi, DCGM scrapes and exports, Prometheus pulls, dcgmi), `traces/` (Philly, Helios,
Acme, Alibaba), `logs/` (job logs). Here at the top: the format contract (base.py), the
registry, the orchestrator (load.py with plan, read_ahead, parse_pool, store_file,
store_parsed, forget, progress), telemetry samples met twice (samples.py), and what the
families share to read files (files, lines, csv_scan, csv_rejects, memory).
"""

from gpucluster_analysis.ingest.base import FileFormat, FileReport, IngestOptions
from gpucluster_analysis.ingest.load import ingest_paths
from gpucluster_analysis.ingest.progress import IngestListener
from gpucluster_analysis.ingest.registry import FORMATS, detect_format, format_named

__all__ = [
    "FORMATS",
    "FileFormat",
    "FileReport",
    "IngestListener",
    "IngestOptions",
    "detect_format",
    "format_named",
    "ingest_paths",
]
