"""How the rows of a sacct dump hang together, found in line order once they are staged.

A job's block is its run of consecutive rows (rows with a readable job id; a header starts
another dump, so another block); a step belongs to the nearest allocation row above it in its
block and het component (docs/schema.md, "Reading Slurm"). sql/ingest/slurm_sacct.sql needs,
per row, its block and (a step) the line of that allocation row; per block, its job, dump,
number of allocation rows, its lines' md5 digests one after the other (the record digests
are made of them) and whether its job is met in another block of the file. The rows come
here in line order, so all of it is a pass over arrays: no sort by line, where the SQL's windows
ordered by line sorted every line of the dump (3-5 s at a million jobs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa

BLOCK_SCHEMA = pa.schema(
    [
        ("block_no", pa.int64()),
        ("job_id", pa.string()),
        ("dump", pa.int32()),
        ("allocs", pa.int32()),
        ("digests", pa.large_string()),
        ("once", pa.bool_()),
    ]
)


@dataclass
class Links:
    """Per row of the keys (in their order): block_no, alloc_line (its own line for an
    allocation row, null for a step without one above it) and alone (the row is the only
    allocation row of its job in the file: one block, one allocation row); and `blocks`,
    one row per block (BLOCK_SCHEMA; `once`: its job is met in no other block, by _met_once,
    which may say no of a job met once whose number is another's, `07` and `7`)."""

    block_no: pa.Array
    alloc_line: pa.Array
    alone: pa.Array
    blocks: pa.Table


def link(keys: pa.Table) -> Links:
    """The links of staged rows in line order: `keys` has line, job_id (as stored: the cluster
    prefix given), dump, het_offset, is_alloc and digest (md5 hex of the line as staged)."""
    n = keys.num_rows
    if n == 0:
        return Links(
            pa.array([], pa.int64()), pa.array([], pa.int64()), pa.array([], pa.bool_()), BLOCK_SCHEMA.empty_table()
        )
    frame = pl.from_arrow(keys.select(["job_id", "dump"]))
    assert isinstance(frame, pl.DataFrame)
    job, dump = pl.col("job_id"), pl.col("dump")
    # NULL dumps are one dump (the SQL compared them with IS DISTINCT FROM)
    starts = frame.select(job.ne_missing(job.shift(1)) | dump.ne_missing(dump.shift(1))).to_series().to_numpy()
    block_no = np.cumsum(starts, dtype=np.int64)
    is_alloc = keys.column("is_alloc").to_numpy()
    lines = keys.column("line").to_numpy()
    # a step takes the last allocation row above it in its block: the row index of the last
    # allocation row or block start at or above each row (a running maximum), whose line is
    # the step's allocation row when that row is one
    last = np.where(is_alloc | starts, np.arange(n), 0)
    np.maximum.accumulate(last, out=last)
    alloc_line = pa.array(lines[last], mask=~is_alloc[last])
    het = keys.column("het_offset")
    if het.null_count < n:
        # blocks with het components: the allocation row above in the same component
        rows = pl.DataFrame(
            {
                "block_no": block_no,
                "het_offset": pl.from_arrow(het),
                "is_alloc": is_alloc,
                "line": lines,
                "alloc_line": pl.from_arrow(alloc_line),
            }
        )
        het_blocks = rows.filter(pl.col("het_offset").is_not_null())["block_no"].unique()
        by_component = pl.when(pl.col("is_alloc")).then(pl.col("line")).forward_fill().over(["block_no", "het_offset"])
        alloc_line = (
            rows.select(
                pl.when(pl.col("block_no").is_in(het_blocks.implode()))
                .then(by_component)
                .otherwise(pl.col("alloc_line"))
                .cast(pl.Int64)
            )
            .to_series()
            .to_arrow()
        )

    first = np.flatnonzero(starts)
    allocs = np.add.reduceat(is_alloc.astype(np.int32), first)
    block_jobs = keys.column("job_id").take(pa.array(first))
    once = _met_once(pl.Series(block_jobs.combine_chunks()))
    blocks = pa.Table.from_arrays(
        [
            pa.array(np.arange(1, len(first) + 1, dtype=np.int64)),
            block_jobs,
            keys.column("dump").take(pa.array(first)).cast(pa.int32()),
            pa.array(allocs.astype(np.int32)),
            _block_digests(keys.column("digest"), first, n),
            pa.array(once),
        ],
        schema=BLOCK_SCHEMA,
    )
    alone = (once & (allocs == 1))[block_no - 1]
    return Links(pa.array(block_no), alloc_line, pa.array(alone), blocks)


def _met_once(jobs: pl.Series) -> np.ndarray:
    """Which blocks' jobs are met in one block of the file only. Most job ids are whole
    numbers, whose uniqueness as integers is found at a fraction of the strings' cost: equal
    texts are equal numbers, so a number met once is a text met once (a number met again may
    be another text, `07` and `7`: then its job takes the general way, which is never wrong).
    The other ids (array tasks, clusters' prefixes) are compared as texts among themselves."""
    numbers = jobs.cast(pl.Int64, strict=False)
    numeric = numbers.is_not_null().to_numpy()
    once = np.zeros(len(jobs), dtype=bool)
    once[numeric] = _met_once_among(numbers.filter(numeric).to_numpy())
    once[~numeric] = jobs.filter(~numeric).is_unique().to_numpy()
    return once


def _met_once_among(values: np.ndarray) -> np.ndarray:
    """Which of `values` occur once, by a sort: a dump lists its jobs in about the order of
    their ids, which the adaptive (stable) sort takes nearly as it is, a tenth of a hash
    table's time (in a shuffled order, twice it)."""
    order = np.argsort(values, kind="stable")
    ranked = values[order]
    again = np.zeros(len(values), dtype=bool)
    same = ranked[1:] == ranked[:-1]
    again[1:] |= same
    again[:-1] |= same
    once = np.empty(len(values), dtype=bool)
    once[order] = ~again
    return once


def _block_digests(digests: pa.ChunkedArray, starts: np.ndarray, n: int) -> pa.Array:
    """Each block's lines' digests joined, in line order: every digest is 32 characters, so a
    block's are a slice of all of them, one after the other (no string built per block)."""
    whole = digests.combine_chunks().cast(pa.large_string())
    assert whole.null_count == 0
    offsets = np.frombuffer(whole.buffers()[1], dtype=np.int64)[whole.offset : whole.offset + n + 1]
    # md5 hex: 32 characters each
    assert np.all(np.diff(offsets) == 32), "an md5 digest that is not 32 characters"
    ends = np.append(offsets[starts], offsets[n])
    return pa.LargeStringArray.from_buffers(len(starts), pa.py_buffer(ends), whole.buffers()[2])
