"""The staged rows of a sacct dump, collected in line order as Arrow tables (whichever way
they were typed) and handed to DuckDB in place, with the links of each job's rows (link.py)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gpucluster_analysis.ingest.slurm.values import TEXT_LIMIT

BATCH_ROWS = 10_000

STAGE_COLUMNS = [
    ("line", pa.int64()),
    ("job_id", pa.string()),
    ("het_offset", pa.int32()),
    ("step", pa.string()),
    ("problem", pa.string()),
    ("job_name", pa.string()),
    ("user_name", pa.string()),
    ("user_uid", pa.string()),
    ("account", pa.string()),
    ("partition", pa.string()),
    ("state", pa.string()),
    ("source_status", pa.string()),
    ("status", pa.string()),
    ("cancelled_by", pa.string()),
    ("exit_code", pa.int32()),
    ("exit_signal", pa.int32()),
    ("derived_exit_code", pa.int32()),  # DerivedExitCode: the highest exit code of the steps
    ("derived_exit_signal", pa.int32()),
    ("submit_t", pa.string()),
    ("eligible_t", pa.string()),
    ("start_t", pa.string()),
    ("end_t", pa.string()),
    ("time_limit_s", pa.int64()),
    ("gpus", pa.int64()),
    ("req_gpus", pa.int64()),
    ("gpu_model", pa.string()),
    ("nnodes", pa.int32()),
    ("hosts", pa.int32()),
    ("start_unknown", pa.bool_()),
    ("cluster", pa.string()),
    ("qos", pa.string()),
    ("dump", pa.int32()),
    ("text", pa.string()),
]
STAGE_SCHEMA = pa.schema(STAGE_COLUMNS)
# a step row as the SQL reads it (its run's outcome and the checks)
STEP_COLUMNS = [
    ("line", pa.int64()),
    ("job_id", pa.string()),
    ("het_offset", pa.int32()),
    ("step", pa.string()),
    ("problem", pa.string()),
    ("state", pa.string()),
    ("status", pa.string()),
    ("exit_code", pa.int32()),
    ("exit_signal", pa.int32()),
    ("cluster", pa.string()),
    ("text", pa.string()),
]
STEP_SCHEMA = pa.schema(STEP_COLUMNS)
# every row with a job id, in line order, as link.py reads it (with each line's md5, `digest`)
LINK_SCHEMA = pa.schema(
    [
        ("line", pa.int64()),
        ("job_id", pa.string()),
        ("cluster", pa.string()),
        ("dump", pa.int32()),
        ("het_offset", pa.int32()),
        ("is_alloc", pa.bool_()),
    ]
)
_UNREAD_SCHEMA = pa.schema([("line", pa.int64()), ("problem", pa.string()), ("text", pa.string())])
_HOST_SCHEMA = pa.schema([("line", pa.int64()), ("machine_id", pa.string())])


class Stager:
    """Collects the staged rows in line order, as Arrow tables held until finish(), which hands
    them to DuckDB in place (a copy costs seconds at a million jobs): the allocation rows with
    every column (stage_sacct_allocs), the step rows with the few the SQL reads
    (stage_sacct_steps), the rows without a job id (stage_sacct_unread), each block of a job's
    rows (stage_sacct_blocks, from link.py) and the hosts (stage_sacct_host). Rows parsed line
    by line come every BATCH_ROWS rows, or before the next rows sacct_fast typed. The reader
    yields a run's typed rows before the run's other lines (which the exact way reads), so the
    rows of a run and of the lines after it are put in line order when the next run comes
    (the rows of two such segments never interleave). `text` is
    kept for the rows read line by line only (the typed rows' lines are read again from the file
    for the few that SQL rejects: a million jobs' lines held till then were ~1 GB); each line's
    md5 is taken as it is staged, for the nightly-dump rules."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.rows: dict[str, list[Any]] = {name: [] for name, _ in STAGE_COLUMNS}
        self.hosts: dict[str, list[Any]] = {"line": [], "machine_id": []}
        self.allocs: list[pa.Table] = []
        self.steps: list[pa.Table] = []
        self.keys: list[pa.Table] = []
        self.unread: list[pa.Table] = []
        self.host_tables: list[pa.Table] = []
        self.segment: list[tuple[pa.Table, pa.Table, pa.Table]] = []  # (allocs, steps, keys) not yet in order
        self.registered: list[str] = []
        self.side = con.cursor()  # md5 of the lines read line by line (_line_digests)

    def add(self, row: dict[str, object], hosts: list[str]) -> None:
        for name in self.rows:
            self.rows[name].append(row.get(name))
        for host in hosts:
            self.hosts["line"].append(row["line"])
            self.hosts["machine_id"].append(host)
        if len(self.rows["line"]) >= BATCH_ROWS:
            self.flush()

    def prepare(self, typed: Any) -> _TypedRun:
        """What the stager keeps of rows sacct_fast typed (a sacct_fast.FastRows): Arrow tables
        of its schemas, with each line's md5. Safe in a worker thread (its own cursor), so that
        it runs beside the reading (a third of the typed rows' cost at a million jobs)."""
        cursor = self.con.cursor()
        try:
            # 32-bit string offsets: half the memory of polars' 64-bit ones
            allocs, steps, keys = _kept(
                cursor,
                typed.allocs.to_arrow().cast(STAGE_SCHEMA),
                typed.steps.to_arrow().cast(STEP_SCHEMA),
                typed.keys.to_arrow().cast(LINK_SCHEMA),
                typed.texts,
            )
        finally:
            cursor.close()
        hosts = typed.hosts.to_arrow().cast(_HOST_SCHEMA) if typed.hosts.height else None
        return _TypedRun(allocs, steps, keys, hosts, typed.gpu_keyed)

    def add_typed(self, run: _TypedRun) -> None:
        """Rows typed by sacct_fast, as prepare() made them, after the rows read before them."""
        self.flush()
        self._settle()
        self.segment.append((run.allocs, run.steps, run.keys))
        if run.hosts is not None:
            self.host_tables.append(run.hosts)

    def _settle(self) -> None:
        """The segment's rows, in line order, after the rows before them."""
        if not self.segment:
            return
        allocs, steps, keys = (pa.concat_tables(part) for part in zip(*self.segment, strict=True))
        self.segment = []
        lines = keys.column("line").to_numpy()
        if np.any(lines[1:] < lines[:-1]):
            allocs, steps, keys = (t.take(pc.sort_indices(t.column("line"))) for t in (allocs, steps, keys))
        self.allocs.append(allocs)
        self.steps.append(steps)
        self.keys.append(keys)

    def flush(self) -> None:
        if self.rows["line"]:
            batch = pa.Table.from_pydict(self.rows, schema=STAGE_SCHEMA)
            has_id = pc.is_valid(batch.column("job_id"))
            is_alloc = pc.and_(has_id, pc.is_null(batch.column("step")))
            self.unread.append(batch.filter(pc.invert(has_id)).select(_UNREAD_SCHEMA.names))
            keyed = batch.filter(has_id)
            keys = keyed.append_column("is_alloc", pc.is_null(keyed.column("step"))).select(LINK_SCHEMA.names)
            self.segment.append(
                _kept(
                    self.side,
                    batch.filter(is_alloc),
                    batch.filter(pc.and_(has_id, pc.invert(is_alloc))).select(STEP_SCHEMA.names),
                    keys,
                    keyed.column("text"),
                )
            )
            self.rows = {name: [] for name in self.rows}
        if self.hosts["line"]:
            self.host_tables.append(pa.Table.from_pydict(self.hosts, schema=_HOST_SCHEMA))
            self.hosts = {"line": [], "machine_id": []}

    def finish(self, gpus_accounted: bool, before_links: Callable[[], None]) -> None:
        """Stage the rest, link the rows into blocks and hand every table to DuckDB. The rows
        are linked in a thread (link.py: one core for ~0.5 s at a million jobs) while
        `before_links` runs the SQL that reads the allocation rows' own columns alone (their
        times), on stage_sacct_allocs as staged; the tables with the links come after."""
        self.flush()
        self._settle()
        allocs = _concat(self.allocs, STAGE_SCHEMA)
        steps = _concat(self.steps, STEP_SCHEMA)
        keys = _concat(self.keys, LINK_SCHEMA.append(pa.field("digest", pa.string())))
        unread = _concat(self.unread, _UNREAD_SCHEMA)
        hosts = _concat(self.host_tables, _HOST_SCHEMA)
        self.allocs, self.steps, self.keys, self.unread, self.host_tables = [], [], [], [], []
        # sacct -M all: job ids repeat across clusters, so a dump of several keeps them apart as
        # <cluster>/<job id> (one cluster's dump keeps sacct's ids, which its logs and scontrol use)
        if len(pc.unique(keys.column("cluster")).drop_null()) > 1:
            allocs, steps, keys = (_with_cluster(t) for t in (allocs, steps, keys))
        # No row names a GPU: the site does not account GPUs in TRES (AccountingStorageTRES
        # without gres/gpu), so a TRES without one says nothing about GPUs. Unknown, not 0.
        if not gpus_accounted:
            for name in ("gpus", "req_gpus"):
                at = allocs.schema.get_field_index(name)
                allocs = allocs.set_column(at, name, pa.nulls(len(allocs), allocs.schema.field(name).type))
        from gpucluster_analysis.ingest.slurm import link  # imports polars, slow to import

        with ThreadPoolExecutor(max_workers=1) as linker:
            linking = linker.submit(link.link, keys)
            self._register("stage_sacct_allocs", allocs)
            before_links()
            links = linking.result()
        # allocs and steps are the keys' rows of each kind, in the same (line) order
        is_alloc = keys.column("is_alloc")
        block_no = links.block_no.filter(is_alloc)
        # each allocation row with its block's digests: a job's only allocation row is its
        # record, whose digest the SQL then takes without a join
        allocs = (
            allocs.append_column("block_no", block_no)
            .append_column("alone", links.alone.filter(is_alloc))
            .append_column("digests", links.blocks.column("digests").take(pc.subtract(block_no, 1)))
        )
        steps = steps.append_column("alloc_line", links.alloc_line.filter(pc.invert(is_alloc)))
        for name, table in (
            ("stage_sacct_allocs", allocs),
            ("stage_sacct_steps", steps),
            ("stage_sacct_unread", unread),
            ("stage_sacct_blocks", links.blocks),
            ("stage_sacct_host", hosts),
        ):
            self._register(name, table)

    def _register(self, name: str, table: pa.Table) -> None:
        self.con.register(name, table)  # in place of a table of that name registered before
        if name not in self.registered:
            self.registered.append(name)

    def close(self) -> None:
        """Let go of the staged rows held in memory (and the view the SQL made over them)."""
        self.con.execute("DROP VIEW IF EXISTS stage_sacct_linked").fetchall()
        for name in self.registered:
            try:
                self.con.unregister(name)
            except duckdb.Error:
                pass
        self.registered = []
        self.side.close()


@dataclass
class _TypedRun:
    """A run of rows sacct_fast typed, as the stager keeps them (Stager.prepare)."""

    allocs: pa.Table
    steps: pa.Table
    keys: pa.Table  # with each line's md5, `digest`
    hosts: pa.Table | None
    gpu_keyed: bool


def _kept(
    cursor: duckdb.DuckDBPyConnection, allocs: pa.Table, steps: pa.Table, keys: pa.Table, texts: pa.Array
) -> tuple[pa.Table, pa.Table, pa.Table]:
    """Staged rows as the stager keeps them, typed either way: the allocation and step rows
    without the bytes under their null strings, the keys with each line's md5 (`texts`: the
    keys' lines)."""
    return _compact(allocs), _compact(steps), keys.append_column("digest", _line_digests(cursor, texts))


def _line_digests(cursor: duckdb.DuckDBPyConnection, texts: pa.Array) -> pa.ChunkedArray:
    """Each line's md5, of the line as staged (cut at TEXT_LIMIT characters), on `cursor`
    (queries of Arrow data alone: a result the loader left unread on the store's connection
    must not stop them)."""
    lines = pa.table({"text": texts})  # noqa: F841  -- DuckDB reads it by name
    # left() counts characters: a line of at most TEXT_LIMIT bytes is whole, so the cut is
    # only taken on the longer ones (it was a third of the md5's time)
    return (
        cursor.sql(
            f"SELECT CASE WHEN strlen(text) <= {TEXT_LIMIT} THEN md5(text)"
            f" ELSE md5(left(text, {TEXT_LIMIT})) END FROM lines"
        )
        .to_arrow_table()
        .column(0)
    )


def _concat(tables: list[pa.Table], schema: pa.Schema) -> pa.Table:
    return pa.concat_tables(tables) if tables else schema.empty_table()


def _with_cluster(table: pa.Table) -> pa.Table:
    """job_id as <cluster>/<job id> where the row names its cluster."""
    cluster = table.column("cluster")
    job_id = pc.if_else(
        pc.is_null(cluster), table.column("job_id"), pc.binary_join_element_wise(cluster, table.column("job_id"), "/")
    )
    return table.set_column(table.schema.get_field_index("job_id"), "job_id", job_id)


def _compact(table: pa.Table) -> pa.Table:
    """The table with its string columns rid of the bytes under null slots (_without_null_bytes)."""
    return pa.Table.from_arrays(
        [_without_null_bytes(c) if c.type == pa.string() else c for c in table.columns], schema=table.schema
    )


def _without_null_bytes(column: pa.ChunkedArray) -> pa.Array:
    """A string column without the bytes of its null slots, which a polars string keeps from
    before it was nulled (a step's times: ~0.3 GB at a million jobs)."""
    column = column.combine_chunks()
    if column.null_count == 0:
        return column
    valid = column.is_valid().to_numpy(zero_copy_only=False)
    at = pa.array(np.cumsum(valid) - 1, mask=~valid)
    return column.filter(pa.array(valid)).take(at)
