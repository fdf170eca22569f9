"""Machine lists given again (issue #29, part 5): one rule for Philly's cluster_machine_list and
Slurm's node lists. A machine a later list of the same source gives with the same values is
unchanged; with other values the later list holds; a new machine is stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import PHILLY_SAMPLE
from tests.store_helpers import ingest, rows, write

HEADER = "machineId, number of GPUs, single GPU mem\n"


def test_a_later_philly_list_keeps_what_is_the_same_and_holds_what_changed(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    first = write(tmp_path / "a" / "cluster_machine_list", HEADER + "m1,2, 12GB\nm2,8, 24GB\n")
    later = write(tmp_path / "b" / "cluster_machine_list", HEADER + "m1,2, 12GB\nm2,4, 24GB\nm3,8, 24GB\n")
    (a,) = ingest(db, first)
    (b,) = ingest(db, later)
    assert (a.rows, a.superseded, a.unchanged) == (2, 0, 0)
    # m1 again as it was: unchanged; m2 with 4 GPUs instead of 8: the later list holds; m3: new
    assert (b.status, b.rows, b.rejects, b.superseded, b.unchanged) == ("loaded", 2, 0, 1, 1)
    assert rows(
        db,
        "SELECT m.machine_id, m.listed_gpus, f.path FROM machines m JOIN ingested_files f USING (file_id) ORDER BY 1",
    ) == [("m1", 2, str(first)), ("m2", 4, str(later)), ("m3", 8, str(later))]


def test_slurm_node_lists_follow_the_same_rule(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    first = write(tmp_path / "sinfo1.txt", "gpu01|gpu:a100:8\ngpu02|gpu:a100:8\n")
    later = write(tmp_path / "sinfo2.txt", "gpu01|gpu:a100:8\ngpu02|gpu:a100:4\n")
    ingest(db, first, format_name="slurm_nodes")
    (b,) = ingest(db, later, format_name="slurm_nodes")
    assert (b.rows, b.superseded, b.unchanged) == (1, 1, 1)
    assert rows(db, "SELECT machine_id, listed_gpus FROM machines ORDER BY 1") == [("gpu01", 8), ("gpu02", 4)]


def test_the_philly_sample_with_its_upstream_examples_loads_whole(tmp_path: Path) -> None:
    """The Philly repository's README examples list m31 again as the trace's list has it: no
    news, not a failure of the folder."""
    if not PHILLY_SAMPLE.exists():
        pytest.skip("../shared/data/philly-sample is not here")
    db = tmp_path / "s.duckdb"
    reports = ingest(db, PHILLY_SAMPLE)
    assert all(r.status == "loaded" for r in reports)
    (upstream,) = [r for r in reports if str(r.path).endswith("upstream_examples/cluster_machine_list")]
    assert (upstream.rows, upstream.rejects, upstream.unchanged) == (0, 0, 1)
    listed = (PHILLY_SAMPLE / "cluster_machine_list").read_text().splitlines()[1:]
    assert rows(db, "SELECT count(*) FROM machines") == [(len({ln.split(",")[0] for ln in listed if ln.strip()}),)]
