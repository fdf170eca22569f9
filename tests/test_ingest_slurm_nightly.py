"""Nightly sacct dumps that overlap (issue 15, part 6): in either order, or as one file, the
store ends as one ingest of their union.

Two dumps are cut from a synthetic trace's sacct.txt the way sacct prints them: dump A
taken at T (a run going at T is RUNNING with End Unknown, a job waiting at T is PENDING
with no node), dump B taken at the end with a window starting at T0 < T (every job still
known after T0, as finished). Jobs finished between T0 and T are in both, identical; jobs
unfinished at T are in both, finished in B.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from gpucluster_analysis.synth.slurm import generate_slurm_trace
from gpucluster_analysis.synth.slurm_jobs import slurm_duration
from gpucluster_analysis.synth.slurm_sacct import SACCT_COLUMNS
from tests.store_helpers import ingest, jobs_csv, rows

COL = {name: i for i, name in enumerate(SACCT_COLUMNS)}
# the same trace as the tests of synth's Slurm view use, in summer (no repeated hour near T)
START = datetime(2017, 6, 1, 12, 0)
T = "2017-06-01T19:00:00"  # dump A: what sacct said at T
T0 = "2017-06-01T15:00:00"  # dump B: -S T0, taken after everything ended
TABLES = {
    "jobs": "source, job_id",
    "attempts": "source, job_id, attempt_no",
    "attempt_hosts": "source, job_id, attempt_no, machine_id",
}


def _records(lines: list[str]) -> dict[str, list[list[str]]]:
    """Each job's lines (allocation rows and their steps), split into fields, in file order."""
    jobs: dict[str, list[list[str]]] = {}
    for line in lines[1:]:
        fields = line.split("|")
        jobs.setdefault(fields[COL["JobID"]].split(".")[0], []).append(fields)
    return jobs


def _seconds(a: str, b: str) -> int:
    return int((datetime.fromisoformat(b) - datetime.fromisoformat(a)).total_seconds())


def _at_t(fields: list[str]) -> list[str]:
    """A row of a run going at T, as sacct prints it then."""
    out = list(fields)
    out[COL["State"]], out[COL["ExitCode"]], out[COL["End"]] = "RUNNING", "0:0", "Unknown"
    out[COL["Elapsed"]] = slurm_duration(_seconds(fields[COL["Start"]], T))
    return out


def _pending(alloc: list[str]) -> list[str]:
    """The row of a job waiting at T (for its first run, or again after a requeue)."""
    out = list(alloc)
    eligible = alloc[COL["Eligible"]]
    out[COL["State"]], out[COL["ExitCode"]] = "PENDING", "0:0"
    out[COL["Eligible"]] = eligible if eligible <= T else "Unknown"
    out[COL["Start"]] = out[COL["End"]] = "Unknown"
    out[COL["Elapsed"]], out[COL["AllocTRES"]], out[COL["NodeList"]] = "00:00:00", "", "None assigned"
    return out


def cut_at_t(record: list[list[str]]) -> tuple[list[list[str]], bool]:
    """(the job's lines in a dump taken at T, whether it was finished then); no lines: not submitted yet."""
    if record[0][COL["Submit"]] > T:
        return [], False
    out: list[list[str]] = []
    for fields in record:
        is_step = "." in fields[COL["JobID"]]
        if is_step:
            if out and out[-1] is not None:
                if fields[COL["Start"]] <= T < fields[COL["End"]]:
                    out.append(_at_t(fields))
                elif fields[COL["End"]] <= T:
                    out.append(fields)
            continue
        start, end = fields[COL["Start"]], fields[COL["End"]]
        never_ran = fields[COL["NodeList"]] == "None assigned"
        if (never_ran and end > T) or (not never_ran and start > T):
            return out + [_pending(fields)], False
        if not never_ran and end > T:
            # its steps follow; a later run does not exist yet
            out.append(_at_t(fields))
            running = [out[-1]]
            for step in record[record.index(fields) + 1 :]:
                if "." not in step[COL["JobID"]]:
                    break
                if step[COL["Start"]] <= T:
                    running.append(_at_t(step) if T < step[COL["End"]] else step)
            return out[:-1] + running, False
        out.append(fields)
    return out, True


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("nightly")
    trace = out / "trace"
    generate_slurm_trace(trace, jobs=160, machines=6, days=1.0, seed=11, interval_s=1800, start=START)
    lines = (trace / "sacct.txt").read_text().splitlines()
    header, records = lines[0], _records(lines)
    a_lines, b_lines, finished_at_t = [header], [header], {}
    for job_id, record in records.items():
        at_t, finished = cut_at_t(record)
        if at_t:
            a_lines += ["|".join(f) for f in at_t]
            finished_at_t[job_id] = finished
        if max(f[COL["End"]] for f in record if "." not in f[COL["JobID"]]) >= T0:
            b_lines += ["|".join(f) for f in record]
    b_jobs = {line.split("|")[0] for line in b_lines[1:] if "." not in line.split("|")[0]}
    a_text, b_text = "\n".join(a_lines) + "\n", "\n".join(b_lines) + "\n"
    (out / "a").mkdir()
    (out / "b").mkdir()
    (out / "a" / "sacct-A.txt").write_text(a_text)
    (out / "b" / "sacct-B.txt").write_text(b_text)
    (out / "sacct-AB.txt").write_text(a_text + b_text)
    # by hand: a job in both dumps is superseded when it was unfinished at T, unchanged when its lines are the same
    overlap = set(finished_at_t) & b_jobs
    a_record = {j: [x for x in a_lines[1:] if x.split("|")[0].split(".")[0] == j] for j in overlap}
    b_record = {j: [x for x in b_lines[1:] if x.split("|")[0].split(".")[0] == j] for j in overlap}
    return {
        "dir": out,
        "truth": json.loads((trace / "truth.json").read_text()),
        "full": trace / "sacct.txt",
        "a": out / "a" / "sacct-A.txt",
        "b": out / "b" / "sacct-B.txt",
        "ab": out / "sacct-AB.txt",
        "superseded": sum(not finished_at_t[j] for j in overlap),
        "unchanged": sum(a_record[j] == b_record[j] for j in overlap),
        "overlap": len(overlap),
        "unfinished_at_t": sum(not f for f in finished_at_t.values()),
    }


def _table(db: Path, table: str) -> list[tuple]:
    return rows(db, f"SELECT * EXCLUDE (file_id) FROM {table} ORDER BY {TABLES[table]}")


def test_the_cut_is_a_real_overlap(dumps: dict) -> None:
    # guards against a vacuous pass: jobs running and pending at T, finished ones in both dumps
    assert dumps["superseded"] >= 8 and dumps["unchanged"] >= 10
    assert dumps["superseded"] + dumps["unchanged"] == dumps["overlap"]
    a = dumps["a"].read_text()
    assert "|RUNNING|" in a and "|PENDING|" in a and "|REQUEUED|" in a


@pytest.mark.slow  # five merges compared; the replace below merges in the default run
def test_either_order_and_one_file_give_the_union(dumps: dict, tmp_path: Path) -> None:
    zone = dumps["truth"]["zone"]
    ab, ba, one, full = (tmp_path / f"{name}.duckdb" for name in ("ab", "ba", "one", "full"))
    first_a, then_b = ingest(ab, dumps["a"], zone=zone)[0], ingest(ab, dumps["b"], zone=zone)[0]
    first_b, then_a = ingest(ba, dumps["b"], zone=zone)[0], ingest(ba, dumps["a"], zone=zone)[0]
    (together,) = ingest(one, dumps["ab"], zone=zone)
    ingest(full, dumps["full"], zone=zone)
    for report in (first_a, then_b, first_b, then_a, together):
        assert (report.status, report.rejects) == ("loaded", 0), report.message
    # the counts are what the two files say, in every order
    counted = (dumps["superseded"], dumps["unchanged"])
    assert (then_b.superseded, then_b.unchanged) == (then_a.superseded, then_a.unchanged) == counted
    assert (together.superseded, together.unchanged) == counted
    assert (first_a.superseded, first_a.unchanged, first_b.superseded, first_b.unchanged) == (0, 0, 0, 0)
    # dump A alone leaves the jobs unfinished at T running or pending
    with_a = tmp_path / "a.duckdb"
    ingest(with_a, dumps["a"], zone=zone)
    assert rows(with_a, "SELECT count(*) FROM jobs WHERE status IN ('running', 'pending')") == [
        (dumps["unfinished_at_t"],)
    ]
    # every table sacct fills is the same, and the same as the whole trace's dump gives
    for table in TABLES:
        want = _table(full, table)
        assert want, table
        assert _table(ab, table) == want, table
        assert _table(ba, table) == want, table
        assert _table(one, table) == want, table
    assert rows(ab, "SELECT count(*) FROM rejects") == rows(ba, "SELECT count(*) FROM rejects") == [(0,)]
    # jobs.csv, as the report writes it, is the same in the three stores
    csv = jobs_csv(ab)
    assert jobs_csv(ba) == csv and jobs_csv(one) == csv
    # and says what the generator knows of how each job ended
    truth = {j["job_id"]: j for j in dumps["truth"]["jobs"]}
    assert set(csv) == set(truth)
    for column in ("status", "submit_time", "first_start_time", "end_time", "attempts", "num_gpus"):
        assert [(j, csv[j][column]) for j in truth if csv[j][column] != truth[j][column]] == [], column


def test_replace_of_the_older_dump_keeps_the_union(dumps: dict, tmp_path: Path) -> None:
    zone = dumps["truth"]["zone"]
    db, full = tmp_path / "s.duckdb", tmp_path / "full.duckdb"
    ingest(db, dumps["a"], zone=zone)
    ingest(db, dumps["b"], zone=zone)
    ingest(full, dumps["full"], zone=zone)
    # taking A back hands the jobs B holds identically to B; A's unfinished records lose again
    (again,) = ingest(db, dumps["a"], zone=zone, replace=True)
    assert (again.status, again.rejects, again.superseded, again.unchanged) == (
        "replaced",
        0,
        dumps["superseded"],
        dumps["unchanged"],
    )
    for table in TABLES:
        assert _table(db, table) == _table(full, table), table
    # and taking B back too: the jobs A now holds identically are handed to A, the rest of B comes
    # again; A's superseded records were not kept, so nothing is superseded this time
    (b_again,) = ingest(db, dumps["b"], zone=zone, replace=True)
    assert (b_again.status, b_again.rejects, b_again.superseded, b_again.unchanged) == (
        "replaced",
        0,
        0,
        dumps["unchanged"],
    )
    for table in TABLES:
        assert _table(db, table) == _table(full, table), table


def test_a_store_from_before_version_8_merges_too(dumps: dict, tmp_path: Path) -> None:
    from gpucluster_analysis.db import open_store

    zone = dumps["truth"]["zone"]
    db, full = tmp_path / "old.duckdb", tmp_path / "full.duckdb"
    ingest(db, dumps["a"], zone=zone)
    with open_store(db) as con:  # as an older gca left it: no record of what it stored
        con.execute("DELETE FROM sacct_records")
        con.execute("UPDATE schema_version SET version = 7")
    (later,) = ingest(db, dumps["b"], zone=zone)
    assert later.rejects == 0
    # the digest is not known: the identical records are taken again from B (superseded, not unchanged)
    assert (later.superseded, later.unchanged) == (dumps["superseded"] + dumps["unchanged"], 0)
    ingest(full, dumps["full"], zone=zone)
    for table in TABLES:
        assert _table(db, table) == _table(full, table), table
