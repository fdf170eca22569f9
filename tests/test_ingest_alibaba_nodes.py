"""Alibaba cluster-trace-gpu-v2023 node lists (openb_node_list_*.csv) into machines.

The real lists in ../shared/data/public-traces/alibaba-gpu-2023 are counted here with the
csv module, independently of gca; the broken files are hand-written, with the expected
rejects worked out line by line.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from gpucluster_analysis.ingest import detect_format
from gpucluster_analysis.ingest.files import read_head
from tests.conftest import SHARED_DATA, require
from tests.store_helpers import ingest, rows, write

ALIBABA_2023 = SHARED_DATA / "public-traces" / "alibaba-gpu-2023"
ALL_NODES = ALIBABA_2023 / "openb_node_list_all_node.csv"
GPU_NODES = ALIBABA_2023 / "openb_node_list_gpu_node.csv"
HEADER = "sn,cpu_milli,memory_mib,gpu,model\n"


def test_the_real_node_list_is_stored_node_for_node(tmp_path: Path) -> None:
    path = require(ALL_NODES)
    with open(path, newline="") as f:
        listed = list(csv.DictReader(f))
    by_model: dict[str | None, int] = {}
    for r in listed:
        by_model[r["model"] or None] = by_model.get(r["model"] or None, 0) + int(r["gpu"])
    db = tmp_path / "t.duckdb"
    (report,) = ingest(db, path)
    assert (report.format, report.status, report.rows, report.rejects) == (
        "alibaba_node_list",
        "loaded",
        len(listed),
        0,
    )
    assert rows(db, "SELECT count(*), count(DISTINCT machine_id), sum(listed_gpus) FROM machines") == [
        (len(listed), len({r["sn"] for r in listed}), sum(int(r["gpu"]) for r in listed))
    ]
    assert dict(rows(db, "SELECT gpu_model, sum(listed_gpus) FROM machines GROUP BY gpu_model")) == by_model
    assert rows(db, "SELECT DISTINCT source FROM machines") == [("alibaba",)]
    assert rows(db, "SELECT count(*) FROM machines WHERE gpu_memory_gb IS NOT NULL") == [(0,)]
    # every node's CPUs (millicores / 1000) and memory, as listed
    stored = {m: (c, mem) for m, c, mem in rows(db, "SELECT machine_id, cpus, memory_mib FROM machines")}
    assert stored == {r["sn"]: (int(r["cpu_milli"]) / 1000, float(r["memory_mib"])) for r in listed}


def test_the_gpu_node_list_after_the_full_one_is_rejected_node_for_node(tmp_path: Path) -> None:
    # openb_node_list_gpu_node.csv numbers the GPU nodes of the same cluster from 0 again:
    # its names are the full list's, so a second list in the store is refused row by row, saying why
    with open(require(GPU_NODES), newline="") as f:
        gpu_nodes = sum(1 for _ in csv.DictReader(f))
    db = tmp_path / "t.duckdb"
    ingest(db, require(ALL_NODES))
    (report,) = ingest(db, GPU_NODES)
    # every node rejected: the file fails as a whole, with the first reason as the likely cause
    assert report.status == "failed"
    assert report.message.startswith(
        f"{GPU_NODES}:2: every row was rejected, nothing stored ({gpu_nodes:,} rows); the likely cause, in all:"
        f" node openb-node-0000 already stored from {ALL_NODES} (the node lists describe the same cluster: "
        "ingest one per store)"
    )
    assert rows(db, "SELECT count(*) FROM rejects") == [(0,)]


def test_recognized_by_header_and_by_name(tmp_path: Path) -> None:
    renamed = write(tmp_path / "nodes.csv", HEADER + "n1,8000,1024,1,T4\n")
    fmt = detect_format(renamed, read_head(renamed))
    assert fmt is not None and fmt.name == "alibaba_node_list"
    # columns reordered, and an extra one: found by name
    reordered = write(
        tmp_path / "openb_node_list_x.csv", "gpu,model,rack,sn,memory_mib,cpu_milli\n2,V100M32,r1,n2,2048,16000\n"
    )
    fmt = detect_format(reordered, read_head(reordered))
    assert fmt is not None and fmt.name == "alibaba_node_list"
    db = tmp_path / "t.duckdb"
    ingest(db, reordered)
    assert rows(db, "SELECT machine_id, listed_gpus, cpus, memory_mib, gpu_model, source FROM machines") == [
        ("n2", 2, 16.0, 2048.0, "V100M32", "alibaba")
    ]


def test_broken_rows_are_rejected_with_their_lines(tmp_path: Path) -> None:
    path = write(
        tmp_path / "openb_node_list_broken.csv",
        HEADER
        + "\n".join(
            [
                "n1,96000,393216,8,G2",  # 2: fine
                "n2,32000,262144,0,",  # 3: fine, a CPU node (no model)
                "n3,32000,262144,0",  # 4: 4 fields
                "n4,32000,262144,two,T4",  # 5
                "n5,-1000,262144,2,T4",  # 6
                "n6,32000,lots,2,T4",  # 7
                "n7,32000,262144,-2,T4",  # 8
                "n8,32000,262144,1.5,T4",  # 9
                ",32000,262144,2,T4",  # 10
                "n1,64000,262144,2,P100",  # 11: n1 again
                "n9,32000,262144,,T4",  # 12: no GPU count
                "n10,,,4,A10",  # 13: fine, CPUs and memory not given
                "n11,32000,262144,inf,T4",  # 14
            ]
        )
        + "\n",
    )
    db = tmp_path / "t.duckdb"
    (report,) = ingest(db, path)
    assert (report.status, report.rows, report.rejects) == ("loaded", 3, 10)
    assert rows(db, "SELECT line, reason FROM rejects ORDER BY line") == [
        (4, "4 fields where the header has 5"),
        (5, "gpu is not a whole number of GPUs: two"),
        (6, "cpu_milli is not a number of CPU millicores >= 0: -1000"),
        (7, "memory_mib is not a number of MiB >= 0: lots"),
        (8, "gpu is not a whole number of GPUs: -2"),
        (9, "gpu is not a whole number of GPUs: 1.5"),
        (10, "row without a node name (sn)"),
        (11, "duplicate node name n1 (first seen on an earlier line)"),
        (12, "node n9 without a GPU count"),
        (14, "gpu is not a whole number of GPUs: inf"),
    ]
    assert rows(
        db, "SELECT machine_id, listed_gpus, cpus, memory_mib, gpu_model FROM machines ORDER BY machine_id"
    ) == [
        ("n1", 8, 96.0, 393216.0, "G2"),
        ("n10", 4, None, None, "A10"),
        ("n2", 0, 32.0, 262144.0, None),
    ]


def test_a_node_listed_by_another_machine_list_is_rejected(tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    philly = write(tmp_path / "cluster_machine_list", "machineId, number of GPUs, single GPU mem\nn1,8,24GB\n")
    ingest(db, philly)
    (report,) = ingest(
        db, write(tmp_path / "openb_node_list_x.csv", HEADER + "n1,96000,393216,8,G2\nn2,96000,393216,8,G2\n")
    )
    assert (report.rows, report.rejects) == (1, 1)
    assert rows(db, "SELECT line, reason FROM rejects") == [
        (2, f"node n1 already stored from {philly} (the node lists describe the same cluster: ingest one per store)")
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", ": the file is empty (expected an Alibaba cluster-trace-gpu-v2023 node list CSV with its header line)"),
        (
            "sn,cpu_milli,gpu,model\nn1,1000,1,T4\n",
            ":1: the header has no memory_mib column (expected an Alibaba cluster-trace-gpu-v2023 node list "
            "CSV whose first"
            " line names its columns (sn, cpu_milli, memory_mib, gpu, ...))",
        ),
    ],
)
def test_an_unreadable_node_list_fails_in_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path / "openb_node_list_x.csv", text)
    (report,) = ingest(tmp_path / "t.duckdb", path, format_name="alibaba_node_list")
    assert (report.status, report.message) == ("failed", f"{path}{message}")
    assert rows(tmp_path / "t.duckdb", "SELECT count(*) FROM machines") == [(0,)]


def test_replace_takes_back_the_nodes(tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    path = tmp_path / "openb_node_list_all_node.csv"
    shutil.copy(require(ALL_NODES), path)
    ingest(db, path)
    write(path, HEADER + "n1,96000,393216,8,G2\n")
    (report,) = ingest(db, path, replace=True)
    assert (report.status, report.rows) == ("replaced", 1)
    assert rows(db, "SELECT machine_id FROM machines") == [("n1",)]


def test_a_node_with_more_gpus_than_any_holds_is_rejected(tmp_path: Path) -> None:
    """Issue #26: a node's GPU count past the bound of GPUs per node (1,024, --max-gpus-per-node)."""
    path = write(tmp_path / "openb_node_list_x.csv", HEADER + "n1,96000,393216,8,G2\nn2,96000,393216,5000,G2\n")
    db = tmp_path / "t.duckdb"
    (report,) = ingest(db, path)
    assert (report.rows, report.rejects) == (1, 1)
    assert rows(db, "SELECT line, reason FROM rejects") == [
        (3, "5000 GPUs on one node: over the bound of 1,024 GPUs per node (--max-gpus-per-node)")
    ]
