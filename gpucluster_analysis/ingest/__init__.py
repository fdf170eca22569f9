"""Reading raw cluster logs into the store.

`FORMATS` is the registry of input formats; `ingest_paths` is the entry point.
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
