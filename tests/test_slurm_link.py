"""ingest/slurm/link.py's link (rows of a sacct dump into blocks, in one pass over arrays) against the rules
written out line by line: a block is a job's run of consecutive rows within one dump; a step's
allocation row is the last one above it in its block with the same het component; a block's
digests are its lines' digests one after the other; a row is alone when it is the only
allocation row of its job in the file."""

from __future__ import annotations

import hashlib
import random

import pyarrow as pa
import pytest

from gpucluster_analysis.ingest.slurm import link


def _keys(rng: random.Random, rows: int, het: bool) -> pa.Table:
    """Rows as a dump gives them: jobs with steps, repeated jobs, blocks that start with a
    step, het components, a second dump with a job of the first."""
    out: dict[str, list] = {"line": [], "job_id": [], "dump": [], "het_offset": [], "is_alloc": [], "digest": []}
    line, dump = 1, 1
    jobs = [str(1000 + k) for k in range(rows // 5)]
    while len(out["line"]) < rows:
        if rng.random() < 0.02:
            dump += 1
            line += 1  # the header
        job = rng.choice(jobs[:8]) if rng.random() < 0.1 else rng.choice(jobs)
        components = [rng.randrange(3) for _ in range(rng.randrange(1, 4))] if het and rng.random() < 0.3 else [None]
        for comp in components:
            for k in range(rng.randrange(0, 5)):
                alloc = (k == 0 and rng.random() < 0.9) or rng.random() < 0.1
                out["line"].append(line)
                out["job_id"].append(job)
                out["dump"].append(dump)
                out["het_offset"].append(comp)
                out["is_alloc"].append(alloc)
                out["digest"].append(hashlib.md5(f"{line}".encode()).hexdigest())
                line += rng.choice([1, 1, 1, 2])  # unread lines between
    return pa.table(
        out,
        schema=pa.schema(
            [
                ("line", pa.int64()),
                ("job_id", pa.string()),
                ("dump", pa.int32()),
                ("het_offset", pa.int32()),
                ("is_alloc", pa.bool_()),
                ("digest", pa.string()),
            ]
        ),
    )


def _by_rule(keys: pa.Table) -> tuple[list, list, list, list]:
    rows = keys.to_pylist()
    block_no, alloc_line, blocks = [], [], []
    last_alloc: dict[object, int] = {}
    for i, row in enumerate(rows):
        if i == 0 or (row["job_id"], row["dump"]) != (rows[i - 1]["job_id"], rows[i - 1]["dump"]):
            blocks.append(
                {"block_no": len(blocks) + 1, "job_id": row["job_id"], "dump": row["dump"], "allocs": 0, "digests": ""}
            )
            last_alloc = {}
        block = blocks[-1]
        block["allocs"] += row["is_alloc"]
        block["digests"] += row["digest"]
        if row["is_alloc"]:
            last_alloc[row["het_offset"]] = row["line"]
        block_no.append(block["block_no"])
        alloc_line.append(last_alloc.get(row["het_offset"]))
    blocks_of_job: dict[str, int] = {}
    for block in blocks:
        blocks_of_job[block["job_id"]] = blocks_of_job.get(block["job_id"], 0) + 1
    for block in blocks:
        block["once"] = blocks_of_job[block["job_id"]] == 1
    alone = [
        rows[i]["is_alloc"] and blocks_of_job[rows[i]["job_id"]] == 1 and blocks[b - 1]["allocs"] == 1
        for i, b in enumerate(block_no)
    ]
    return block_no, alloc_line, alone, blocks


@pytest.mark.parametrize("het", [False, True])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_links_follow_the_rules(seed: int, het: bool) -> None:
    keys = _keys(random.Random(seed), 3000, het)
    block_no, alloc_line, alone, blocks = _by_rule(keys)
    links = link.link(keys)
    assert links.block_no.to_pylist() == block_no
    assert links.alloc_line.to_pylist() == alloc_line
    # only allocation rows are read for `alone`
    is_alloc = keys.column("is_alloc").to_pylist()
    assert [a for a, keep in zip(links.alone.to_pylist(), is_alloc, strict=True) if keep] == [
        a for a, keep in zip(alone, is_alloc, strict=True) if keep
    ]
    assert links.blocks.to_pylist() == blocks
    assert any(a is None for a in alloc_line) and len(blocks) < len(
        block_no
    )  # steps without one; blocks of several rows
    assert 0 < sum(alone) < sum(is_alloc)


def test_no_rows() -> None:
    keys = _keys(random.Random(0), 0, False)
    links = link.link(keys)
    assert len(links.block_no) == len(links.alloc_line) == len(links.alone) == links.blocks.num_rows == 0


def test_met_once_never_says_once_of_a_job_met_again() -> None:
    """Whole-number ids are compared as numbers: `07` and `7` are then both taken as met again
    (their jobs take the general way, never wrong); a text met twice is never `once`; every
    other id is exact."""
    import polars as pl

    jobs = ["7", "07", "8", "9", "9", "123_4", "123_4", "123_5", "c1/5", "c2/5", "+10", "10", "11", " 12", "12"]
    once = link._met_once(pl.Series(jobs)).tolist()
    exact = [jobs.count(j) == 1 for j in jobs]
    assert all(e or not o for o, e in zip(once, exact, strict=True))  # never once where the text repeats
    assert dict(zip(jobs, once, strict=True)) == {
        "7": False,
        "07": False,
        "8": True,
        "9": False,
        "123_4": False,
        "123_5": True,
        "c1/5": True,
        "c2/5": True,
        "+10": False,
        "10": False,
        "11": True,
        " 12": True,
        "12": True,
    }


@pytest.mark.parametrize("order", ["sorted", "shuffled", "descending"])
def test_numbers_met_once_by_sort_are_those_counted_once(order: str) -> None:
    """The sort that finds the whole-number ids met once agrees with a count, whatever order
    the dump lists them in (a repeat next to its first, far from it, three times)."""
    from collections import Counter

    import numpy as np

    rng = random.Random(5)
    values = [rng.randrange(0, 3000) for _ in range(2000)] + [2**62, 2**62, -1]
    if order == "sorted":
        values.sort()
    elif order == "descending":
        values.sort(reverse=True)
    else:
        rng.shuffle(values)
    counts = Counter(values)
    once = link._met_once_among(np.array(values, dtype=np.int64)).tolist()
    assert once == [counts[v] == 1 for v in values]
    assert any(once) and not all(once)
