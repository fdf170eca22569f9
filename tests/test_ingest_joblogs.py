"""Job logs as ingest input: placing each file by its path, classifying it, reporting the rest."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucluster_analysis.cli import app
from gpucluster_analysis.db import open_store
from gpucluster_analysis.errors import InputError
from gpucluster_analysis.ingest import IngestOptions, ingest_paths
from gpucluster_analysis.ingest.logs.joblogs import compile_log_pattern, cuda_visible_indices, place_log
from tests.store_helpers import rows, write

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "synthetic"

CUDA_OOM = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 10, in <module>\n'
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity)\n"
)
IMPORT_ERROR = "Traceback (most recent call last):\nModuleNotFoundError: No module named 'apex'\n"
TRAINING = "epoch 1 loss 0.93\nepoch 2 loss 0.71\n"


class Recorder:
    def __init__(self) -> None:
        self.skips: list[tuple[str, str]] = []

    def skipped(self, path: Path, reason: str) -> None:
        self.skips.append((path.name, reason))

    def planned(self, files: int) -> None: ...
    def file_started(self, *a: object) -> None: ...
    def file_progress(self, *a: object) -> None: ...
    def file_finished(self, *a: object) -> None: ...


@pytest.mark.parametrize(
    ("path", "pattern", "expected"),
    [
        ("run/logs/job_7/attempt_2/stderr.log", None, ("job_7", 2, "stderr", "synth")),
        ("run/logs/application_1_2/attempt_0/stdout.log", None, ("application_1_2", 0, "stdout", "synth")),
        ("out/slurm-4242.out", None, ("4242", None, "stdout", "slurm")),
        ("out/slurm-4242_17.out", None, ("4242_17", None, "stdout", "slurm")),
        ("out/slurm-4242.err.gz", None, ("4242", None, "stderr", "slurm")),
        ("site/77/3/stderr.txt", "{job_id}/{attempt}/stderr.txt", ("77", 3, "stderr", "pattern")),
        ("site/jobs/77-run/out.txt", "jobs/{job_id}-*/{stream}.txt", ("77", None, "stdout", "pattern")),
        ("out/my-train-4242.out", "*-{job_id}.out", ("4242", None, "stdout", "pattern")),  # sbatch -o %x-%j.out
        ("site/77/3/notes.txt", "{job_id}/{attempt}/stderr.txt", None),
        ("out/slurm-abc.out", None, None),
        ("run/logs/job_7/stderr.log", None, None),
    ],
)
def test_paths_are_placed_by_layout(path: str, pattern: str | None, expected: tuple | None) -> None:
    place = place_log(Path(path), IngestOptions(log_pattern=pattern))
    got = None if place is None else (place.job_id, place.attempt_ref, place.stream, place.layout)
    assert got == expected


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{attempt}/stderr.txt", "no {job_id}"),
        ("{job_id}/{try}.txt", "unknown placeholder {try}"),
        ("{job_id}/{job_id}.txt", "at most once"),
    ],
)
def test_bad_log_patterns_say_what_is_wrong(template: str, message: str) -> None:
    with pytest.raises(InputError, match=message.replace("{", r"\{").replace("}", r"\}")):
        compile_log_pattern(template)


def test_cuda_visible_devices_gives_integer_indices_only() -> None:
    log = (
        b"CUDA_VISIBLE_DEVICES=2,3\n[rank1]: CUDA_VISIBLE_DEVICES: 3, 0\n"
        b"export CUDA_VISIBLE_DEVICES='GPU-8a1b'\nCUDA_VISIBLE_DEVICES=\n"
    )
    assert cuda_visible_indices(log) == [0, 2, 3]
    # an index past the bound of GPUs per node (bounds.py) is no GPU the job got
    assert cuda_visible_indices(b"CUDA_VISIBLE_DEVICES=1,1023,1024,99999999999") == [1, 1023]
    assert cuda_visible_indices(b"CUDA_VISIBLE_DEVICES=1,1023,1024", max_gpus_per_node=2048) == [1, 1023, 1024]


def test_synth_layout_classifies_every_file_and_keeps_identical_logs_of_different_jobs(tmp_path: Path) -> None:
    logs = tmp_path / "trace" / "logs"
    write(logs / "job_a" / "attempt_0" / "stderr.log", CUDA_OOM)
    write(logs / "job_a" / "attempt_0" / "stdout.log", TRAINING)
    write(logs / "job_b" / "attempt_1" / "stderr.log", CUDA_OOM)  # same bytes, another job
    write(logs / "job_b" / "attempt_0" / "stderr.log", "CUDA_VISIBLE_DEVICES=0,1\n" + IMPORT_ERROR)
    db = tmp_path / "s.duckdb"
    with open_store(db) as con:
        reports = ingest_paths(con, [tmp_path / "trace"], IngestOptions())
    assert sorted(r.status for r in reports) == ["loaded"] * 4
    got = rows(db, "SELECT job_id, attempt_ref, stream, reason, category, line_number FROM job_logs ORDER BY ALL")
    assert got == [
        ("job_a", 0, "stderr", "cuda_oom", "framework", 3),
        ("job_a", 0, "stdout", "none", "none", None),  # training output shows no failure
        ("job_b", 0, "stderr", "import_error", "user", 3),
        ("job_b", 1, "stderr", "cuda_oom", "framework", 3),
    ]
    bindings = rows(db, "SELECT job_id, attempt_ref, machine_id, gpu_index, origin FROM gpu_bindings ORDER BY ALL")
    assert bindings == [("job_b", 0, None, 0, "cuda_visible_devices"), ("job_b", 0, None, 1, "cuda_visible_devices")]


def test_example_trace_logs_land_on_the_attempts_truth_names(tmp_path: Path) -> None:
    # Every failed attempt in truth.json names its log folder; each must be stored under that job and attempt.
    truth = json.loads((EXAMPLE / "truth.json").read_text())
    expected = {(a["job_id"], a["source_index"]) for a in truth["attempts"] if a["log_dir"]}
    db = tmp_path / "s.duckdb"
    with open_store(db) as con:
        ingest_paths(con, [EXAMPLE / "logs"], IngestOptions())
    stored = set(rows(db, "SELECT DISTINCT job_id, attempt_ref FROM job_logs"))
    assert stored == expected


def test_gzip_and_slurm_logs(tmp_path: Path) -> None:
    with gzip.open(tmp_path / "slurm-9.out.gz", "wt") as f:
        f.write(TRAINING * 1000 + CUDA_OOM)
    write(
        tmp_path / "slurm-9_4.out",
        "slurmstepd: error: *** JOB 9 ON gpu01 CANCELLED AT 2024-01-01T00:00:00 DUE TO TIME LIMIT ***\n",
    )
    db = tmp_path / "s.duckdb"
    with open_store(db) as con:
        ingest_paths(con, [tmp_path], IngestOptions())
    got = rows(db, "SELECT job_id, attempt_ref, layout, reason FROM job_logs ORDER BY job_id")
    assert got == [("9", None, "slurm", "cuda_oom"), ("9_4", None, "slurm", "time_limit")]


def test_unplaced_log_files_are_reported_not_ignored(tmp_path: Path) -> None:
    write(tmp_path / "logs" / "job_a" / "attempt_0" / "stderr.log", IMPORT_ERROR)
    write(tmp_path / "logs" / "job_a" / "worker.log", IMPORT_ERROR)  # no attempt folder
    write(tmp_path / "notes.md", "# notes\n")
    listener = Recorder()
    with open_store(tmp_path / "s.duckdb") as con:
        reports = ingest_paths(con, [tmp_path], IngestOptions(), listener=listener)
    assert [r.format for r in reports] == ["job_log"]
    reasons = dict(listener.skips)
    assert "--log-pattern" in reasons["worker.log"]
    assert reasons["notes.md"] == "not a format gca reads"


def test_a_log_named_on_the_command_line_that_no_layout_places_is_an_error(tmp_path: Path) -> None:
    log = write(tmp_path / "worker.log", IMPORT_ERROR)
    result = CliRunner().invoke(app, ["ingest", str(log), "--db", str(tmp_path / "s.duckdb")])
    assert result.exit_code != 0
    assert "worker.log" in result.output and "--log-pattern" in result.output
    assert "Traceback" not in result.output


def test_log_pattern_and_user_signatures_through_the_cli(tmp_path: Path) -> None:
    write(tmp_path / "site" / "77" / "3" / "stderr.txt", "FATAL: licence server unreachable\n")
    sigs = write(
        tmp_path / "extra.toml",
        """
[[signature]]
id = "licence_server"
reason = "network_error"
pattern = 'licence server unreachable'
priority = 650
description = "the site's licence server is down"
examples = ["FATAL: licence server unreachable"]
counter_examples = ["licence ok"]
""",
    )
    db = tmp_path / "s.duckdb"
    result = CliRunner().invoke(
        app,
        [
            "ingest",
            str(tmp_path / "site"),
            "--db",
            str(db),
            "--log-pattern",
            "{job_id}/{attempt}/stderr.txt",
            "--signatures",
            str(sigs),
        ],
    )
    assert result.exit_code == 0, result.output
    assert rows(db, "SELECT job_id, attempt_ref, reason, signature_id FROM job_logs") == [
        ("77", 3, "network_error", "licence_server")
    ]
    # The job is not in the store: said once, with what to do.
    assert "not in the store" in result.output and "77" in result.output


def test_broken_signature_file_fails_before_anything_is_stored(tmp_path: Path) -> None:
    write(tmp_path / "logs" / "j" / "attempt_0" / "stderr.log", IMPORT_ERROR)
    sigs = write(tmp_path / "bad.toml", '[[signature]]\nid = "x"\nreason = "not_a_reason"\npattern = "a"\n')
    db = tmp_path / "s.duckdb"
    result = CliRunner().invoke(app, ["ingest", str(tmp_path / "logs"), "--db", str(db), "--signatures", str(sigs)])
    assert result.exit_code != 0
    assert "bad.toml" in result.output and "Traceback" not in result.output
    assert not db.exists()  # refused before the store was even opened


def test_replacing_a_log_replaces_its_classification(tmp_path: Path) -> None:
    log = write(tmp_path / "logs" / "j" / "attempt_0" / "stderr.log", IMPORT_ERROR)
    db = tmp_path / "s.duckdb"
    with open_store(db) as con:
        ingest_paths(con, [log], IngestOptions())
        log.write_text(CUDA_OOM)
        ingest_paths(con, [log], IngestOptions(replace=True))
    assert rows(db, "SELECT reason FROM job_logs") == [("cuda_oom",)]


def test_huge_log_is_read_as_head_and_tail_and_says_so(tmp_path: Path) -> None:
    # 8 MiB of training output, then the error: the middle is skipped, the tail read, and
    # a match in the tail has no trustworthy line number.
    from gpucluster_analysis.classify.engine import HEAD_BYTES, TAIL_BYTES

    log = tmp_path / "logs" / "big" / "attempt_0" / "stderr.log"
    log.parent.mkdir(parents=True)
    with open(log, "w") as f:
        f.write(IMPORT_ERROR.replace("apex", "early"))  # in the head: loses to the later, more specific cause
        f.write("step 123 loss 0.5 lr 0.001\n" * ((8 << 20) // 27))
        f.write(CUDA_OOM)
    db = tmp_path / "s.duckdb"
    with open_store(db) as con:
        ingest_paths(con, [log], IngestOptions())
    reason, line_number, truncated, bytes_read = rows(
        db, "SELECT reason, line_number, truncated, bytes_read FROM job_logs"
    )[0]
    assert (reason, line_number, truncated) == ("cuda_oom", None, True)
    assert bytes_read == HEAD_BYTES + TAIL_BYTES


def test_the_store_keeps_each_failed_attempts_root_cause(tmp_path: Path) -> None:
    # The view attempt_root_causes: per failed attempt, the winning file's cause and the other signatures.
    trace = tmp_path / "trace"
    write(
        trace / "cluster_job_log",
        json.dumps(
            [
                {
                    "jobid": "job_a",
                    "status": "Failed",
                    "vc": "v",
                    "user": "u",
                    "submitted_time": "2017-10-10 10:00:00",
                    "attempts": [
                        {
                            "start_time": "2017-10-10 10:01:00",
                            "end_time": "2017-10-10 10:11:00",
                            "detail": [{"ip": "m1", "gpus": ["gpu0"]}],
                        }
                    ],
                }
            ]
        ),
    )
    write(trace / "logs" / "job_a" / "attempt_0" / "stdout.log", TRAINING)
    write(
        trace / "logs" / "job_a" / "attempt_0" / "stderr.log",
        CUDA_OOM + "RuntimeError: CUDA error: an illegal memory access was encountered\n",
    )
    db = tmp_path / "s.duckdb"
    with open_store(db) as con:
        ingest_paths(con, [trace], IngestOptions())
    got = rows(
        db,
        "SELECT job_id, attempt_no, reason, category, stream, line_number, runtime_to_failure_s,"
        " len(other_signatures) > 0 FROM attempt_root_causes",
    )
    assert got == [("job_a", 0, "cuda_oom", "framework", "stderr", 3, 600, True)]


def test_a_file_that_cannot_be_read_when_loaded_fails_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # (Root can read any file, so the failure is simulated where the log is opened.)
    from gpucluster_analysis.ingest.logs import joblogs

    write(tmp_path / "logs" / "a" / "attempt_0" / "stderr.log", IMPORT_ERROR)
    write(tmp_path / "logs" / "b" / "attempt_0" / "stderr.log", CUDA_OOM)
    real = joblogs.read_head_and_tail

    def flaky(path: Path, digest=None):
        if "/a/" in path.as_posix():
            raise PermissionError(13, "Permission denied")
        return real(path, digest)

    monkeypatch.setattr(joblogs, "read_head_and_tail", flaky)
    db = tmp_path / "s.duckdb"
    with open_store(db) as con:
        reports = ingest_paths(con, [tmp_path / "logs"], IngestOptions())
    assert [(r.path.parent.parent.name, r.status) for r in reports] == [("a", "failed"), ("b", "loaded")]
    assert "Permission denied" in reports[0].message
    assert rows(db, "SELECT job_id FROM job_logs") == [("b",)]
    assert rows(db, "SELECT count(*) FROM ingested_files WHERE path LIKE '%/a/%'") == [(0,)]


def test_report_lists_job_logs_per_folder_not_per_file(tmp_path: Path) -> None:
    from gpucluster_analysis.report.build import build_report

    db = tmp_path / "s.duckdb"
    with open_store(db) as con:
        ingest_paths(con, [EXAMPLE], IngestOptions())
    written = build_report(db, tmp_path / "out")
    import csv

    with open(written.out_dir / "rejects_by_file.csv", newline="") as f:
        rows_ = list(csv.DictReader(f))
    logs = [r for r in rows_ if r["format"] == "job_log"]
    truth = json.loads((EXAMPLE / "truth.json").read_text())
    files = 2 * sum(1 for a in truth["attempts"] if a["log_dir"])  # stdout.log and stderr.log per failed attempt
    assert [(r["path"].endswith(f"/logs/ ({files} job logs)"), r["files"]) for r in logs] == [(True, str(files))]
    assert len(rows_) == 5 + 1  # the five Philly files and one folder of logs


def test_many_logs_are_stored_in_batches_and_a_failing_write_stores_none_of_its_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses

    from gpucluster_analysis.ingest import plan
    from gpucluster_analysis.ingest.logs import joblogs

    for k in range(7):
        write(tmp_path / "logs" / f"j{k}" / "attempt_0" / "stderr.log", IMPORT_ERROR if k % 2 else CUDA_OOM)
    write(tmp_path / "logs" / "j4" / "attempt_0" / "stderr.log", "POISON\n")
    monkeypatch.setattr(plan, "PARSED_BATCH_FILES", 3)  # batches j0-j2, j3-j5, j6
    real_classify = joblogs.classify_bytes

    def classify_with_poison(data, sigs, **kw):
        result = real_classify(data, sigs, **kw)
        # a row the store refuses (reason is NOT NULL): the write of j4's batch fails midway
        return dataclasses.replace(result, reason=None) if data.startswith(b"POISON") else result

    monkeypatch.setattr(joblogs, "classify_bytes", classify_with_poison)
    db = tmp_path / "s.duckdb"
    with open_store(db) as con:
        reports = ingest_paths(con, [tmp_path / "logs"], IngestOptions())
    assert [r.status for r in reports] == ["loaded"] * 3 + ["failed"] * 3 + ["loaded"]
    assert "storing failed" in reports[3].message and "Traceback" not in reports[3].message
    stored = rows(db, "SELECT job_id, reason FROM job_logs ORDER BY job_id")
    assert stored == [("j0", "cuda_oom"), ("j1", "import_error"), ("j2", "cuda_oom"), ("j6", "cuda_oom")]
    assert rows(db, "SELECT count(*), count(DISTINCT file_id) FROM ingested_files") == [(4, 4)]
    assert rows(db, "SELECT count(DISTINCT file_id) FROM job_logs") == [(4,)]
