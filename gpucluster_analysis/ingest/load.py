"""Ingest files into the store: plan them, recognize them, store each in one transaction.

This is the orchestrator: plan.py resolves the PATHs to (file, format) pairs and cuts them
into segments; each file is stored by store_file.py in its own transaction (the next files
read ahead in threads, read_ahead.py), and small files that come by the thousand (job logs)
are stored many per transaction by store_parsed.py (parsed ahead in worker processes for
big runs, parse_pool.py). progress.py reports to the listener, forget.py undoes a file's
rows for --replace.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from gpucluster_analysis.errors import GcaError, InputError
from gpucluster_analysis.ingest.base import FileFormat, FileReport, IngestOptions
from gpucluster_analysis.ingest.parse_pool import parse_pool_for
from gpucluster_analysis.ingest.plan import plan_files, plan_segments
from gpucluster_analysis.ingest.progress import IngestListener, Silent
from gpucluster_analysis.ingest.read_ahead import READ_AHEAD_FILES, ReadAhead
from gpucluster_analysis.ingest.registry import sample_kinds
from gpucluster_analysis.ingest.samples import Duplicates, compare_new
from gpucluster_analysis.ingest.store_file import ingest_file
from gpucluster_analysis.ingest.store_parsed import ingest_parsed
from gpucluster_analysis.sqlfiles import run_script


def ingest_paths(
    con: duckdb.DuckDBPyConnection,
    paths: list[Path],
    options: IngestOptions,
    *,
    format_name: str | None = None,
    listener: IngestListener | None = None,
) -> list[FileReport]:
    """Ingest every file under `paths`; one FileReport per file, in order."""
    listener = listener or Silent()
    plan = plan_files(paths, format_name, listener, options)
    listener.planned(len(plan))
    run_script(con, "ingest", "macros", {})
    segments = plan_segments(plan)
    batches = [k for k, (i, j, parsed) in enumerate(segments) if parsed]
    parse_files = sum(segments[k][1] - segments[k][0] for k in batches)
    pool = parse_pool_for(options, parse_files)
    reports: list[FileReport] = []
    reader = ReadAhead(options)
    # DuckDB checkpoints the store every 16 MB of log by default: a day of one node's telemetry
    # is that much, and a checkpoint rewrites the table's last row groups. Checkpoint once, at
    # the end, instead (the log keeps every committed file safe meanwhile).
    threshold = con.execute("SELECT current_setting('checkpoint_threshold')").fetchall()[0][0]
    con.execute(f"SET checkpoint_threshold = '{CHECKPOINT_BYTES}B'")
    try:
        for k, (i, j, parsed) in enumerate(segments):
            if parsed:
                done = None
                if pool is not None:
                    # keep the workers busy with the next batches while this one is stored
                    for next_batch in batches[batches.index(k) : batches.index(k) + 3]:
                        pool.submit(next_batch, plan[segments[next_batch][0] : segments[next_batch][1]])
                    done = pool.results(k)
                    if done is None:  # the workers could not start or died: parse here from now on
                        pool.close()
                        pool = None
                for report in ingest_parsed(con, plan[i:j], options, done):
                    listener.file_finished(report)
                    reports.append(report)
                continue
            path, fmt = plan[i]
            reader.submit(i, path, fmt)
            for ahead in segments[k + 1 : k + 1 + READ_AHEAD_FILES]:  # read the next files while this one is stored
                if not ahead[2]:
                    reader.submit(ahead[0], *plan[ahead[0]])
            try:
                report = ingest_file(con, path, fmt, options, listener, prepared=reader.take(i))
            except GcaError as e:
                report = FileReport(path, fmt.name, "failed", message=str(e), error=e)
            except OSError as e:  # vanished or unreadable between planning and loading; the store is unchanged
                report = _unreadable(path, fmt, e)
            listener.file_finished(report)
            reports.append(report)
        _count_duplicates(reports, compare_new(con, sample_kinds()))
    except BaseException:
        if pool is not None:
            pool.close(abandon=True)
            pool = None
        raise
    finally:
        reader.close()
        if pool is not None:
            pool.close()
        con.execute(f"SET checkpoint_threshold = '{threshold}'")
    return reports


def _count_duplicates(reports: list[FileReport], found: dict[int, Duplicates]) -> None:
    """The telemetry samples each file stored that files before it had (ingest/samples.py):
    counted as duplicates, not as its rows."""
    for report in reports:
        if report.file_id in found:
            duplicates = found[report.file_id]
            report.rows = max(report.rows - duplicates.samples, 0)
            report.duplicates, report.differing = duplicates.samples, duplicates.differing


CHECKPOINT_BYTES = 256 << 20


def _unreadable(path: Path, fmt: FileFormat, e: OSError) -> FileReport:
    error = InputError(f"{path}: cannot read: {e.strerror or e}", hint="check the path and its permissions")
    return FileReport(path, fmt.name, "failed", message=str(error), error=error)


def logs_without_jobs(con: duckdb.DuckDBPyConnection, limit: int = 3) -> tuple[int, list[str]]:
    """Job logs in the store whose job is not (yet) in it: their count and a few job ids."""
    rows = con.execute(
        "SELECT DISTINCT l.job_id FROM job_logs l WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.job_id = l.job_id)"
        " ORDER BY l.job_id"
    ).fetchall()
    return len(rows), [r[0] for r in rows[:limit]]
