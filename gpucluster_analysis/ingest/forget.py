"""Forgetting what an ingested file contributed (--replace): its format's own forget, its
telemetry samples handed over to the files that also hold them, its rows in every table."""

from __future__ import annotations

import duckdb

from gpucluster_analysis.ingest.registry import FORMATS, sample_kinds
from gpucluster_analysis.ingest.samples import hand_over

# Tables whose rows carry the file_id of the file they came from.
_CONTRIBUTING_TABLES = (
    "rejects",
    "jobs",
    "attempts",
    "allocations",
    "machines",
    "gpu_samples",
    "gpu_sample_details",
    "host_samples",
    "attempt_hosts",
    "gpu_bindings",
    "gpu_devices",
    "gpu_events",
    "job_logs",
    "pending_reasons",
    "quotas",
    "sacct_records",
    "sample_spans",
    "gpu_samples_duplicates",
    "gpu_sample_details_duplicates",
    "host_samples_duplicates",
)


def forget_file(con: duckdb.DuckDBPyConnection, file_id: int) -> None:
    (format_name,) = con.execute("SELECT format FROM ingested_files WHERE file_id = ?", [file_id]).fetchall()[0]
    fmt = next((f for f in FORMATS if f.name == format_name), None)
    if fmt is not None and fmt.forget is not None:
        fmt.forget(con, file_id)
    if fmt is not None and fmt.sample_kind:
        hand_over(con, file_id, sample_kinds()[fmt.sample_kind])
    for table in _CONTRIBUTING_TABLES:
        con.execute(f"DELETE FROM {table} WHERE file_id = ?", [file_id])
    con.execute("DELETE FROM ingested_files WHERE file_id = ?", [file_id])
