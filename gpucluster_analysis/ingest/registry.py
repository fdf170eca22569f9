"""Which format a file is: by its path for job logs, else by its content first and its
conventional name second."""

from __future__ import annotations

from pathlib import Path

from gpucluster_analysis.errors import InputError
from gpucluster_analysis.ingest.base import FileFormat, IngestOptions
from gpucluster_analysis.ingest.files import looks_binary
from gpucluster_analysis.ingest.gpu import dcgm, dcgm_query_range, dcgmi, nvsmi, nvsmi_xml
from gpucluster_analysis.ingest.logs import joblogs
from gpucluster_analysis.ingest.slurm import nodes, sacct, sacctmgr, scontrol, squeue
from gpucluster_analysis.ingest.traces import node_faults, philly, public_traces

FORMATS: list[FileFormat] = [
    *philly.FORMATS,
    *joblogs.FORMATS,
    *public_traces.FORMATS,
    *node_faults.FORMATS,
    *nvsmi.FORMATS,
    *nvsmi_xml.FORMATS,
    *dcgm.FORMATS,
    *dcgm_query_range.FORMATS,
    *dcgmi.FORMATS,
    *sacct.FORMATS,
    *scontrol.FORMATS,
    *squeue.FORMATS,
    *nodes.FORMATS,
    *sacctmgr.FORMATS,
]


def format_named(name: str) -> FileFormat:
    for fmt in FORMATS:
        if fmt.name == name.replace("-", "_"):
            return fmt
    known = ", ".join(f.name for f in FORMATS)
    raise InputError(f"unknown format {name!r}", hint=f"--format takes one of: {known}")


def sample_kinds() -> dict[str, list[str]]:
    """Each source kind of telemetry samples (ingest/samples.py) with the names of its formats."""
    kinds: dict[str, list[str]] = {}
    for fmt in FORMATS:
        if fmt.sample_kind:
            kinds.setdefault(fmt.sample_kind, []).append(fmt.name)
    return kinds


def _base_name(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".csv", ".json", ".txt", ".log"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name


def claim_by_path(path: Path, options: IngestOptions) -> FileFormat | None:
    """The format whose path layout explains this file (job logs), if any."""
    for fmt in FORMATS:
        if fmt.claims_path is not None and fmt.claims_path(path, options):
            return fmt
    return None


def near_miss(head: str) -> str | None:
    """Why a file no format's sniffer took is not the format it nearly is; None where none says."""
    if looks_binary(head):
        return None
    return next((why for fmt in FORMATS if fmt.near_miss and (why := fmt.near_miss(head))), None)


def detect_format(path: Path, head: str) -> FileFormat | None:
    """The format whose sniffer accepts the head; a conventional file name breaks ties."""
    if looks_binary(head):
        return None
    by_content = [fmt for fmt in FORMATS if fmt.sniff(head)]
    base = _base_name(path)
    by_name = [
        fmt
        for fmt in FORMATS
        if any(base == n or base.startswith(n + "_") or base.startswith(n + ".") for n in fmt.file_names)
    ]
    if len(by_content) == 1:
        return by_content[0]
    both = [fmt for fmt in by_content if fmt in by_name]
    if both:
        return both[0]
    return None
