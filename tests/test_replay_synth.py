"""The replay against the simulator's own account of why each job waited.

`gca synth` records, per job, the seconds its scheduler kept it waiting for each cause,
judged on its own state (truth.json, docs/synth.md "Why jobs waited"). gca ingests the
written files and replays them with the same quotas (quotas.toml) and the same locality
rule. Where the files show the replay what the simulator saw, the two must agree to the
second. Where they do not, the difference is explained by what the files lose, and the test
says how much that is:
  * a launch failure holds GPUs for a few seconds, but the log gives it no start;
  * a killed job's last attempt may have lost its end ("None");
  * an attempt that ran may have an empty placement (machines unknown);
  * a job with no attempt has no size in the log (no split at all);
  * Slurm: a run spread unevenly over several hosts that scontrol -d did not catch (sacct
    gives only the total, which the replay splits evenly).
A job whose wait overlaps one of these blind stretches may differ; every other must not.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from gpucluster_analysis.analyze.prepare import format_for_csv, jobs_table, prepare
from gpucluster_analysis.db import open_store
from gpucluster_analysis.replay import load_quotas
from gpucluster_analysis.synth import generate_trace
from gpucluster_analysis.synth.slurm import generate_slurm_trace
from tests.store_helpers import ingest

# The same trace as tests/test_synth_waits.py: fair share, fragmentation and other all occur.
ARGS = {"jobs": 300, "machines": 6, "days": 2.0, "seed": 3}
CAUSES = ("wait_fair_share_s", "wait_capacity_s", "wait_fragmentation_s", "wait_other_s")


def _s(text: str | None) -> float | None:
    return None if text is None else datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def blind_stretches(truth: dict[str, Any]) -> list[tuple[float, float]]:
    """Stretches of time in which the files show the replay a different cluster than the simulator had."""

    def real(a: dict[str, Any], key: str) -> float | None:  # Slurm's truth records the real times only
        return _s(a.get(f"real_{key}", a[key]))

    last = max(t for a in truth["attempts"] for t in (real(a, "start_time"), real(a, "end_time")) if t)
    out = []
    for a in truth["attempts"]:
        real_start, real_end = real(a, "start_time"), real(a, "end_time")
        if real_start is None or real_end is None or real_end <= real_start:
            continue
        if a["start_time"] is None:  # launch failure: held GPUs, logged without a start
            out.append((real_start, real_end))
        elif a["end_time"] is None:  # lost end: the replay holds its GPUs until someone else gets them
            out.append((real_end, last + 1))
        elif not a["allocation"]:  # ran, placement not recorded
            out.append((real_start, real_end))
        elif len({len(x["gpus"]) for x in a["allocation"]}) > 1 and "real_allocation" not in a:
            # Slurm, uneven over several hosts: sacct gives the total only, and scontrol -d may
            # not have caught the job; the replay then splits its GPUs evenly
            out.append((real_start, real_end))
    return out


def compare(trace: Path, db: Path, queue_start: str) -> tuple[list[str], list[str], list[str], int]:
    """(jobs that must match and do not, jobs allowed to differ that do, jobs compared, jobs without a split)."""
    truth = json.loads((trace / "truth.json").read_text())
    with open_store(db, read_only=True) as con:
        prepare(con, quotas=load_quotas(trace / "quotas.toml"))
        got = {r["job_id"]: r for r in format_for_csv(jobs_table(con)).to_dicts()}
    blind = blind_stretches(truth)
    must, may, compared, unsplit = [], [], [], 0
    for want in truth["jobs"]:
        row = got[want["job_id"]]
        if want["wait_other_s"] is None:
            continue
        if row["wait_other_s"] is None:
            unsplit += 1  # e.g. a job with no attempt: the log does not give its size
            continue
        compared.append(want["job_id"])
        a = _s(row[queue_start]) if row[queue_start] else _s(want["submit_time"])
        b = a + sum(want[c] for c in CAUSES)
        exposed = any(s < b and a < e for s, e in blind)
        same = all(abs((row[c] or 0.0) - want[c]) < 1e-3 for c in CAUSES)
        if not same:
            (may if exposed else must).append(want["job_id"])
    return must, may, compared, unsplit


@pytest.fixture(scope="module")
def philly(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("replay-synth")
    trace = base / "philly"
    generate_trace(trace, **ARGS)
    db = base / "philly.duckdb"
    ingest(db, *[trace / n for n in ("cluster_job_log", "cluster_machine_list", "cluster_gpu_util")])
    return trace, db


def test_replay_recovers_the_simulators_causes_on_philly_files(philly: tuple[Path, Path]) -> None:
    trace, db = philly
    must, may, compared, unsplit = compare(trace, db, "submit_time")
    print(
        f"philly: {len(compared)} compared, {len(must)} differ outside blind stretches, {len(may)} inside, "
        f"{unsplit} unsplit"
    )
    assert must == []
    # How much the blind stretches cost (docs/waits.md, docs/synth.md): few jobs, stated here.
    assert len(compared) >= 250 and len(may) <= 0.05 * len(compared), (len(may), len(compared))
    assert unsplit <= 0.1 * (len(compared) + unsplit)


def test_every_cause_is_compared(philly: tuple[Path, Path]) -> None:
    truth = json.loads((philly[0] / "truth.json").read_text())
    for cause in ("wait_fair_share_s", "wait_fragmentation_s", "wait_other_s"):
        assert sum(1 for j in truth["jobs"] if (j[cause] or 0) > 0) >= 3, cause


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("replay-synth")
    trace = base / "slurm"
    generate_slurm_trace(trace, **ARGS, interval_s=900)
    db = base / "slurm.duckdb"
    ingest(db, trace / "sacct.txt", trace / "scontrol", zone="America/Los_Angeles")
    return trace, db


def test_replay_recovers_the_simulators_causes_on_slurm_files(slurm: tuple[Path, Path]) -> None:
    trace, db = slurm
    must, may, compared, unsplit = compare(trace, db, "eligible_time")
    print(
        f"slurm: {len(compared)} compared, {len(must)} differ outside blind stretches, {len(may)} inside, "
        f"{unsplit} unsplit"
    )
    # Every job whose wait sees none of the blind stretches above matches to the second.
    assert must == []
    assert len(compared) >= 250 and len(may) <= 0.05 * len(compared), (len(may), len(compared))


def test_sacctmgr_quotas_of_the_synth_trace_split_as_its_quotas_file(slurm: tuple[Path, Path], tmp_path: Path) -> None:
    """The same trace's quotas as `sacctmgr -P show assoc` prints them (sacctmgr_assoc.txt): a
    store holding them, replayed with no --quotas, splits every wait as quotas.toml does."""
    import shutil

    trace, db = slurm
    with_limits = tmp_path / "limits.duckdb"
    shutil.copy(db, with_limits)
    (report,) = ingest(with_limits, trace / "sacctmgr_assoc.txt")
    assert (report.format, report.status, report.rejects) == ("slurm_assoc", "loaded", 0)
    columns = ("job_id", "wait_user_limit_s", *CAUSES)

    def split(store: Path, quotas: Path | None) -> tuple[list[tuple[object, ...]], set[str]]:
        with open_store(store, read_only=True) as con:
            replay = prepare(con, quotas=load_quotas(quotas) if quotas else None)
            origins = set(replay.quotas.get_column("origin").to_list())
            return [tuple(r[c] for c in columns) for r in jobs_table(con).to_dicts()], origins

    by_sacctmgr, origins = split(with_limits, None)
    by_file, _ = split(db, trace / "quotas.toml")
    assert origins == {"sacctmgr"}
    assert by_sacctmgr == by_file
    assert sum(1 for r in by_file if (r[2] or 0) > 0) >= 3  # fair-share waiting is there to compare
