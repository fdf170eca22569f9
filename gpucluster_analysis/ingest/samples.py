"""The identity of a telemetry sample: its source kind, machine, GPU (and MIG instance) and time.

A file is skipped when its bytes equal a file ingested before, but the same samples also come
in other bytes: a `.gz` or CRLF copy, a log with a byte-order mark, logs that overlap (a copy
of a growing log taken later, rotated logs, a Prometheus export of what scrape files already
gave). Once an ingest has stored its files, `compare_new` compares each telemetry file not
compared yet with the files of its kind stored before it, and moves the rows whose sample a row
of such a file stands for to `<table>_duplicates`, where they count nowhere; `hand_over` gives
them back when the file whose row is stored is taken back (`--replace`). The kind is the tool
that measured (`FileFormat.sample_kind`): nvidia-smi and DCGM sampling one GPU at one second are
two measurements, and both are kept.

Cost: samples are compared one by one only where a file's span (per machine, `sample_spans`)
overlaps a span of a file before it. A file is summarized once, when it is compared, and all of
an ingest's new files of a kind at once (one scan of their rows); a store's first file of a kind
is compared with nothing and not read at all until a second file of its kind comes. So the
full-scale ingest of one big file per kind costs one small query, and per-node logs that
overlap nothing one scan of their rows (~0.08 s for 40 node-days of nvidia-smi at 10 s).

Between a file's commit and its comparison at the end of the ingest the store may hold its
duplicates: an ingest stopped in between leaves them until the next ingest, which compares
every file not compared yet.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from gpucluster_analysis.errors import StoreError
from gpucluster_analysis.sqlfiles import bind, load_sql, run_script


@dataclass(frozen=True)
class Duplicates:
    samples: int  # the file's samples already stored from a file before it, not stored again
    differing: int  # of them, those whose values differ from the stored row's


NO_DUPLICATES = Duplicates(0, 0)


def compare_new(con: duckdb.DuckDBPyConnection, kinds: dict[str, list[str]]) -> dict[int, Duplicates]:
    """Compare every telemetry file not compared yet with the files of its kind before it
    (`kinds`: each sample kind's formats), in one transaction; the duplicates found, by file id
    (files with none are left out). Each file's `rows_loaded` then counts its own samples only."""
    kind_of = {fmt: kind for kind, formats in kinds.items() for fmt in formats}
    unchecked_sql = load_sql("ingest", "sample_unchecked")
    holding: dict[str, int] = {}
    unchecked: dict[str, list[int]] = {}
    for fmt, files, new in con.execute(unchecked_sql, bind(unchecked_sql, {"formats": list(kind_of)})).fetchall():
        holding[kind_of[fmt]] = holding.get(kind_of[fmt], 0) + files
        unchecked.setdefault(kind_of[fmt], []).extend(new or [])
    # a kind with one file holding samples has nothing to compare it with: it is not even read
    todo = {kind: sorted(ids) for kind, ids in unchecked.items() if ids and holding[kind] > 1}
    if not todo:
        return {}
    found: dict[int, Duplicates] = {}
    con.execute("BEGIN TRANSACTION")
    try:
        for kind, ids in todo.items():
            run_script(con, "ingest", "sample_spans", {"file_ids": ids, "kind": kind, "lo": ids[0], "hi": ids[-1]})
            overlaps = load_sql("ingest", "sample_overlaps")
            for file_id, holders, from_at, to_at in con.execute(
                overlaps, bind(overlaps, {"file_ids": ids, "kind": kind})
            ).fetchall():
                duplicates = _set_aside(con, file_id, holders, from_at, to_at)
                if duplicates.samples:
                    found[file_id] = duplicates
                    con.execute(
                        "UPDATE ingested_files SET rows_loaded = greatest(rows_loaded - ?, 0) WHERE file_id = ?",
                        [duplicates.samples, file_id],
                    )
        con.execute("COMMIT")
    except BaseException as e:
        con.execute("ROLLBACK")
        _drop_staging(con)
        if isinstance(e, duckdb.Error):
            raise StoreError(
                f"comparing the new telemetry with the samples stored failed: {str(e).splitlines()[0]}",
                hint="the files are stored; the next gca ingest compares them again",
            ) from e
        raise
    _drop_staging(con)
    return found


def _set_aside(
    con: duckdb.DuckDBPyConnection, file_id: int, holders: list[int], from_at: object, to_at: object
) -> Duplicates:
    """Move the rows of `file_id` whose samples rows of `holders` (files before it, of its kind,
    whose spans overlap its own from `from_at` to `to_at`) stand for to `<table>_duplicates`, or,
    where the values differ and `file_id` comes first in the fixed order of files, the stored
    rows instead (sql/ingest/sample_duplicates.sql); how many samples and how many differed."""
    run_script(
        con,
        "ingest",
        "sample_duplicates",
        {"file_id": file_id, "holders": holders, "files": [*holders, file_id], "from_at": from_at, "to_at": to_at},
    )
    tables, samples, differing = con.execute(
        "SELECT count(DISTINCT sample_table), count(*), count(*) FILTER (WHERE NOT same) FROM stage_sample_matches"
    ).fetchall()[0]
    if tables > 1:
        # a sample of nvidia-smi or DCGM has a row in gpu_samples and one in gpu_sample_details:
        # it is a duplicate when one of them is (the other may bring a measure the stored one lacked)
        samples, differing = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE differing) FROM (SELECT bool_or(NOT same) AS differing"
            " FROM stage_sample_matches GROUP BY machine_id, gpu_index, instance, sample_at)"
        ).fetchall()[0]
    return Duplicates(int(samples), int(differing))


def hand_over(con: duckdb.DuckDBPyConnection, file_id: int, formats: list[str]) -> None:
    """Before file `file_id` (of the formats of one kind) is taken back: the samples it stores
    that other files hold aside go to the first of those files (sql/ingest/sample_handover.sql)."""
    heirs, from_at, to_at = con.execute(
        "SELECT list(DISTINCT a.file_id ORDER BY a.file_id), min(a.sample_at), max(a.sample_at)"
        " FROM (SELECT file_id, sample_at FROM gpu_samples_duplicates"
        "       UNION ALL SELECT file_id, sample_at FROM gpu_sample_details_duplicates"
        "       UNION ALL SELECT file_id, sample_at FROM host_samples_duplicates) a"
        " JOIN ingested_files f ON f.file_id = a.file_id"
        " WHERE a.file_id <> ? AND list_contains(?, f.format)",
        [file_id, formats],
    ).fetchall()[0]
    if heirs:
        run_script(
            con, "ingest", "sample_handover", {"file_id": file_id, "heirs": heirs, "from_at": from_at, "to_at": to_at}
        )


def _drop_staging(con: duckdb.DuckDBPyConnection) -> None:
    for (name,) in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE temporary AND table_name LIKE 'stage\\_sample\\_%' ESCAPE '\\'"
    ).fetchall():
        con.execute(f"DROP TABLE IF EXISTS {name}")
