"""Slurm's machine list: `scontrol show node [-o]` and `sinfo -N -h -o '%N|%G'` (issue 15, part 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucluster_analysis.ingest import detect_format
from gpucluster_analysis.ingest.files import read_head
from gpucluster_analysis.ingest.slurm.nodes import gpus_of
from tests.store_helpers import ingest, rows, write

DATA = Path(__file__).parent / "data" / "slurm"


def machines(db: Path) -> list[tuple]:
    return rows(
        db, "SELECT machine_id, listed_gpus, cpus, memory_mib, gpu_model, source FROM machines ORDER BY machine_id"
    )


def test_real_scontrol_show_node_records(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    reports = ingest(db, DATA / "real_scontrol_node_aws.txt", DATA / "real_scontrol_nodes_marcc.txt")
    assert [(r.format, r.status, r.rows, r.rejects) for r in reports] == [("slurm_nodes", "loaded", 1, 0)] * 2
    assert machines(db) == [
        # Slurm 24.11 on AWS: a typed GRES, CfgTRES without gres/gpu; an OS value with blanks,
        # a blank line and a Reason inside the record
        ("gpu-st-ml-1", 1, 32.0, 249036.0, "rtxproserver6000", "slurm"),
        # Slurm 17.11: an untyped `gpu:2`, CfgTRES gres/gpu=2
        ("gpudev002", 2, 24.0, 95307.0, None, "slurm"),
    ]


def test_one_line_records_and_odd_gres(tmp_path: Path) -> None:
    path = write(
        tmp_path / "nodes.txt",
        "\n".join(
            [
                "NodeName=a1 Arch=x86_64 CPUTot=128 RealMemory=1024000 Gres=gpu:a100:8(S:0-1) State=IDLE "
                "CfgTRES=cpu=128,mem=1000G,billing=128,gres/gpu=8",
                "NodeName=a2 CPUTot=64 RealMemory=512000 Gres=gpu:a100:4,gpu:v100:4 State=MIXED",
                "NodeName=a3 CPUTot=32 Gres=gpu:tesla:2(IDX:0,1),mps:200 State=IDLE",
                "NodeName=c1 CPUTot=64 Gres=(null) CfgTRES=cpu=64,mem=256000M",
                "NodeName=a4 Gres=gpu:8 CfgTRES=cpu=64,gres/gpu=6 State=DRAIN Reason=two GPUs off the bus "
                "[admin@2026-01-01T00:00:00]",
                "NodeName=bad Gres=gpu:lots State=IDLE",
                "this is not a node",
            ]
        )
        + "\n",
    )
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, path)
    assert (report.format, report.rows, report.rejects) == ("slurm_nodes", 5, 2)
    assert [m[:3] + m[4:5] for m in machines(db)] == [
        ("a1", 8, 128.0, "a100"),
        ("a2", 8, 64.0, "a100,v100"),
        ("a3", 2, 32.0, "tesla"),
        ("a4", 6, None, None),  # CfgTRES (what Slurm schedules) wins over Gres
        ("c1", 0, 64.0, None),
    ]
    assert rows(db, "SELECT line, reason FROM rejects ORDER BY line") == [
        (6, "unreadable Gres 'gpu:lots' and no gres/gpu in CfgTRES"),
        (7, "neither a NodeName= record nor a `node|gres` line"),
    ]


def test_sinfo_nodes_and_gres(tmp_path: Path) -> None:
    # sinfo -N lists a node once per partition; %N may be a hostlist
    path = write(
        tmp_path / "sinfo.txt", "gpu[01-02]|gpu:a100:8(S:0-1)\ngpu01|gpu:a100:8(S:0-1)\ncpu01|(null)\ngpu03|gpu:4\n"
    )
    assert detect_format(path, read_head(path)).name == "slurm_nodes"
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, path)
    assert (report.rows, report.rejects) == (4, 0)
    assert [m[:2] + m[4:5] for m in machines(db)] == [
        ("cpu01", 0, None),
        ("gpu01", 8, "a100"),
        ("gpu02", 8, "a100"),
        ("gpu03", 4, None),
    ]


@pytest.mark.parametrize(
    ("gres", "want"),
    [
        ("gpu:8", (8, None)),
        ("gpu:a100:8(S:0-1)", (8, "a100")),
        ("gpu:a100:4,gpu:v100:4", (8, "a100,v100")),
        ("gpu:tesla:2(IDX:0,1),mps:200", (2, "tesla")),
        ("(null)", (0, None)),
        ("mps:100", (0, None)),
        ("gpu:lots", (None, None)),
    ],
)
def test_gres_strings(gres: str, want: tuple[int | None, str | None]) -> None:
    assert gpus_of(gres) == want


def test_the_machine_list_gives_a_slurm_store_its_capacity(tmp_path: Path) -> None:
    sacct = write(
        tmp_path / "sacct.txt",
        "JobID|State|Submit|Start|End|NNodes|AllocTRES|NodeList\n"
        "1|COMPLETED|2024-06-01T10:00:00|2024-06-01T10:00:00|2024-06-01T11:00:00|1|cpu=8,gres/gpu=2|gpu01\n",
    )
    nodes = write(tmp_path / "sinfo.txt", "gpu[01-02]|gpu:a100:8(S:0-1)\n")
    db = tmp_path / "s.duckdb"
    ingest(db, sacct, nodes, zone="UTC")
    # listed 8 each; gpu01 observed 2 (the run held 2 GPUs of it); gpu02 never used, still listed
    assert rows(db, "SELECT machine_id, listed_gpus, observed_gpus, gpus FROM machine_capacity ORDER BY 1") == [
        ("gpu01", 8, 2, 8),
        ("gpu02", 8, None, 8),
    ]


def test_a_node_listing_more_gpus_than_any_holds_is_rejected(tmp_path: Path) -> None:
    """Issue #26: a machine list's GPU count is a node's capacity, which the report's GPUs add
    up: one past the bound of GPUs per node (1,024, --max-gpus-per-node) is rejected, once per
    line, and a count past any integer too, where it crashed the store's write."""
    path = write(
        tmp_path / "nodes.txt",
        "\n".join(
            [
                "n01|gpu:8",
                "n[02-03]|gpu:a100:1000000000",
                "n04|gpu:99999999999999999999",
                "NodeName=n05 CPUTot=64 Gres=gpu:8 CfgTRES=cpu=64,gres/gpu=2048",
                "n06|gpu:1024",
            ]
        )
        + "\n",
    )
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, path, format_name="slurm_nodes")
    bound = " GPUs on one node: over the bound of 1,024 GPUs per node (--max-gpus-per-node)"
    assert (report.status, report.rows, report.rejects) == ("loaded", 2, 3)
    assert rows(db, "SELECT line, reason FROM rejects ORDER BY line") == [
        (2, "1000000000" + bound),
        (3, "99999999999999999999" + bound),
        (4, "2048" + bound),
    ]
    assert [m[:2] for m in machines(db)] == [("n01", 8), ("n06", 1024)]
    (report,) = ingest(tmp_path / "b.duckdb", path, format_name="slurm_nodes", max_gpus_per_node=4096)
    assert (report.rows, report.rejects) == (3, 2)  # n05's 2048 now fit; the rest not
