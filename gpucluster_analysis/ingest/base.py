"""The contract between the ingest orchestrator and each input format.

A format knows how to recognize its files (`sniff`) and how to load one file
into the canonical tables (`load`). Loading runs inside a transaction that the
orchestrator owns; a format never commits, prints, or touches files other than
the one it is given. For big inputs the "parser" is DuckDB's own reader,
driven by a named SQL script, so no row becomes a Python object.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from gpucluster_analysis.bounds import DEFAULT_MAX_GPUS_PER_NODE, check_max_gpus_per_node, sql_params


@dataclass(frozen=True)
class IngestOptions:
    """Choices that affect how files are read; recorded with each file where they matter."""

    zone: str | None = None  # zone of naive times; None means the format's own default
    replace: bool = False
    strict: bool = False
    log_pattern: str | None = None  # template placing job logs: {job_id}/{attempt}/stderr.txt
    signatures: tuple[Path, ...] = ()  # extra failure-signature files for classifying job logs
    host: str | None = None  # machine of per-node telemetry files that do not name it (nvidia-smi, DCGM)
    time: str | None = None  # when a timeless snapshot was taken / a dmon run started (ISO 8601 or epoch s)
    interval_s: float | None = None  # seconds between samples of a timeless dmon or --query-gpu log
    columns: tuple[str, ...] | None = None  # field order of a headerless file (sacct -n: JobID,State,...)
    delimiter: str | None = None  # sacct --delimiter (else the header's, or the one the first row shows)
    epoch: str | None = None  # ISO 8601 instant a trace's relative seconds count from (Alibaba); None: 1970-01-01 UTC
    # a row naming more GPUs on one node (or a GPU index at or past it) is rejected (bounds.py)
    max_gpus_per_node: int = DEFAULT_MAX_GPUS_PER_NODE

    def __post_init__(self) -> None:
        check_max_gpus_per_node(self.max_gpus_per_node)

    def bounds(self) -> dict[str, object]:
        """The sanity bounds as the ingest scripts' parameters (bounds.sql_params)."""
        return sql_params(self.max_gpus_per_node)


@dataclass
class LoadContext:
    con: duckdb.DuckDBPyConnection
    path: Path
    file_id: int
    options: IngestOptions
    head: str  # the first few KB of the (decompressed) file, as text
    # Called before statement i of n of the format's SQL script, so progress can span them.
    on_statement: Callable[[int, int], None] | None = None
    prepared: object | None = None  # what the format's `prepare` read of this file ahead of time

    def rows_in(self, table: str) -> int:
        """How many rows of `table` this file has stored so far."""
        return int(self.con.execute(f"SELECT count(*) FROM {table} WHERE file_id = ?", [self.file_id]).fetchall()[0][0])


@dataclass(frozen=True)
class LoadCounts:
    rows: int  # rows stored in the format's main table
    rejects: int
    # What the file's times were read as, when the format decides it while loading (the
    # machine's zone, a zone told by the content, relative seconds from an epoch); the
    # orchestrator records it in ingested_files.time_zone.
    time_zone: str | None = None
    # Records of something already known (a job, a snapshot row, a limit) met again: replaced
    # by a later one or replacing it (superseded), or the same as the one kept (unchanged).
    superseded: int = 0
    unchanged: int = 0
    # What the user should know of a file that loaded (a column missing that the report
    # needs): one line each, naming the file; the CLI prints them as warnings.
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class FileFormat:
    name: str  # e.g. philly_gpu_util; what --format takes and ingested_files.format records
    source: str  # input family: philly, slurm, ...
    description: str
    file_names: tuple[str, ...]  # conventional file names that identify the format
    sniff: Callable[[str], bool]  # given the head of the file, is it this format?
    # A format loads a file itself (big files: DuckDB reads them), or, for small files that
    # come by the thousand, only parses it into rows per table (without file_id) and lets
    # the orchestrator store many files' rows at once.
    load: Callable[[LoadContext], LoadCounts] | None
    default_zone: str | None = None  # zone of the format's naive times, if it has any
    # Recognizes files by their path instead of their content (job logs).
    claims_path: Callable[[Path, IngestOptions], bool] | None = None
    parse: Callable[[Path, IngestOptions], dict[str, list[dict[str, object]]]] | None = None
    # `parse` that also returns the sha256 of the file's bytes, reading the file once.
    parse_hashed: Callable[[Path, IngestOptions], tuple[str, dict[str, list[dict[str, object]]]]] | None = None
    main_table: str | None = None  # of a parse-only format: the table whose rows its summary counts
    # Reads a file without the database, so that the orchestrator can read the next file
    # (in a thread) while it stores this one; `load` then finds the result in ctx.prepared.
    prepare: Callable[[Path, IngestOptions], object] | None = None
    # Called inside the transaction before a file of this format is taken back (--replace),
    # with its file_id: a format whose rows another file may also hold hands them over.
    forget: Callable[[duckdb.DuckDBPyConnection, int], None] | None = None
    # Of a telemetry format: the tool that measured its samples (nvidia-smi, dcgm, philly-gpu,
    # ...). A sample is its kind, machine, GPU and time: one already stored from a file of the
    # same kind is not stored again (ingest/samples.py); another kind's is another measurement.
    sample_kind: str | None = None
    # Given the head of a file its sniffer refused: why it is not this format where it nearly
    # is (a table with a JobID column but no State), said instead of "not a format gca reads".
    near_miss: Callable[[str], str | None] | None = None
    # Given the files of this format found in one folder: those to skip, with why, where they
    # are variants of one another (Alibaba's pod lists re-sample the same pods).
    variants: Callable[[list[Path]], dict[Path, str]] | None = None


@dataclass
class FileReport:
    """What happened to one input file; the CLI renders a list of these."""

    path: Path
    format: str | None
    status: str  # loaded, replaced, unchanged, skipped, failed
    rows: int = 0
    rejects: int = 0
    seconds: float = 0.0
    superseded: int = 0  # as LoadCounts
    unchanged: int = 0
    # telemetry samples already stored from a file before it (ingest/samples.py), not stored
    # again; differing: of them, those whose values were not the stored ones
    duplicates: int = 0
    differing: int = 0
    file_id: int | None = None  # its ingested_files row, once stored
    message: str = ""
    reject_samples: list[tuple[int | None, str]] = field(default_factory=list)
    warnings: tuple[str, ...] = ()  # as LoadCounts
    error: Exception | None = None  # the GcaError that failed the file, when status is failed
