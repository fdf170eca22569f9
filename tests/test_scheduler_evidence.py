"""The rule that combines a job's log with its scheduler's record (issue #28, part 4;
docs/domain.md, "The scheduler's evidence"), case by case, worked out by hand."""

from __future__ import annotations

import pytest

from gpucluster_analysis.db.connect import open_memory

# (state as sacct prints it, ExitCode, the job's UID, the log's reason or None without a log)
#   -> (failure_reason, failure_evidence, exit_signal's name)
CASES = [
    # the log names a cause: it wins, the scheduler's record is more evidence
    (("TIMEOUT", "0:0", None, "cuda_oom"), ("cuda_oom", "both", None)),  # OOM, then hung until the limit
    (("OUT_OF_MEMORY", "0:125", None, "host_oom"), ("host_oom", "both", "SIG_OOM")),
    (("FAILED", "1:0", None, "import_error"), ("import_error", "both", None)),
    # ... except where the node died or the scheduler took it back: what the log shows followed from it
    (("NODE_FAIL", "0:0", None, "nccl_error"), ("node_fail", "both", None)),
    (("PREEMPTED", "0:0", None, "network_error"), ("preempted", "both", None)),
    (("NODE_FAIL", "0:0", None, "gpu_hw"), ("gpu_hw", "both", None)),  # a GPU fault is more specific
    # the log names nothing: the scheduler's record says what it can
    (("TIMEOUT", "0:0", None, "none"), ("time_limit", "scheduler", None)),
    (("OUT_OF_MEMORY", "0:125", None, None), ("host_oom", "scheduler", "SIG_OOM")),
    # COMPLETED 0:0, but a step failed: gca takes the step's exit (DerivedExitCode, the step rows)
    (("COMPLETED", "2:0", None, "none"), ("unknown", "scheduler", None)),
    (("COMPLETED", "0:125", None, None), ("host_oom", "scheduler", "SIG_OOM")),  # a step's cgroup OOM
    (("COMPLETED", "0:11", None, "none"), ("segfault", "scheduler", "SIGSEGV")),
    (("COMPLETED", "0:0", None, "none"), ("none", "none", None)),
    (("FAILED", "1:0", None, "none"), ("unknown", "scheduler", None)),  # exit code 1, no cause in the log
    (("FAILED", "0:9", None, None), ("unknown", "scheduler", "SIGKILL")),
    (("FAILED", "0:11", None, "none"), ("segfault", "scheduler", "SIGSEGV")),
    (("FAILED", "0:7", None, "unknown"), ("segfault", "both", "SIGBUS")),
    (("FAILED", "1:0", None, "unknown"), ("unknown", "both", None)),
    # who cancelled: its own user, root, another account, or a uid the dump cannot place
    (("CANCELLED by 1001", "0:0", "1001", None), ("user_kill", "scheduler", None)),
    (("CANCELLED by 1001", "0:15", "1001", "user_kill"), ("user_kill", "both", "SIGTERM")),
    (("CANCELLED by 0", "0:0", None, None), ("admin_cancel", "scheduler", None)),
    (("CANCELLED by 1002", "0:0", "1001", None), ("admin_cancel", "scheduler", None)),
    (("CANCELLED by 1002", "0:0", None, None), ("cancelled", "scheduler", None)),
    # nothing anywhere
    (("FAILED", "0:0", None, "none"), ("none", "none", None)),
    (("FAILED", "0:0", None, None), (None, "none", None)),
]


@pytest.mark.parametrize(("record", "want"), CASES)
def test_a_jobs_reason_from_its_log_and_its_scheduler(record: tuple, want: tuple) -> None:
    state, exit_code, uid, log_reason = record
    code, signal = (int(v) for v in exit_code.split(":"))
    by = state.split(" by ")[1] if " by " in state else None
    with open_memory() as con:
        got = con.execute(
            "SELECT job_failure_reason($log, s), failure_evidence($log, s), signal_name($signal)"
            " FROM (SELECT scheduler_reason($state, $code, $signal, $by, $uid) AS s)",
            {"log": log_reason, "state": state, "code": code, "signal": signal, "by": by, "uid": uid},
        ).fetchone()
    assert got == want


DERIVED_DUMP = """\
JobID|User|Account|State|ExitCode|DerivedExitCode|Submit|Start|End|AllocTRES|NodeList
1|ann|ml|COMPLETED|0:0|0:0|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-03-01T11:00:00|gres/gpu=1,node=1|gpu01
2|ann|ml|COMPLETED|0:0|3:0|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-03-01T11:00:00|gres/gpu=1,node=1|gpu01
3|ann|ml|COMPLETED|0:0|0:9|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-03-01T11:00:00|gres/gpu=1,node=1|gpu01
4|ann|ml|COMPLETED|0:0|0:125|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-03-01T11:00:00|gres/gpu=1,node=1|gpu01
5|ann|ml|CANCELLED by 0|0:0|0:15|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-03-01T11:00:00|gres/gpu=1,node=1|gpu01
6|ann|ml|FAILED|1:0|2:0|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-03-01T11:00:00|gres/gpu=1,node=1|gpu01
7|ann|ml|COMPLETED|0:0|x:y|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-03-01T11:00:00|gres/gpu=1,node=1|gpu01
"""


def test_sacct_derived_exit_code_is_the_failed_steps_exit(tmp_path) -> None:
    """sacct -X with DerivedExitCode (the highest exit code of the job's steps): a job COMPLETED
    0:0 whose steps failed is failed, with the steps' exit; a signal in a cancelled run is its
    teardown; a job's own non-zero ExitCode stays its own; an unreadable value is a reject."""
    from tests.store_helpers import ingest, jobs_csv

    dump = tmp_path / "sacct.txt"
    dump.write_text(DERIVED_DUMP)
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, dump)
    assert (report.rows, report.rejects) == (6, 1)
    got = {
        j: (r["status"], r["exit_code"], r["exit_signal"], r["failure_reason"], r["failure_evidence"])
        for j, r in jobs_csv(db).items()
    }
    assert got == {
        "1": ("passed", 0, None, None, None),
        "2": ("failed", 3, None, "unknown", "scheduler"),  # exit code 3, no cause in a log
        "3": ("failed", 0, "SIGKILL", "unknown", "scheduler"),
        "4": ("failed", 0, "SIG_OOM", "host_oom", "scheduler"),  # a step's cgroup OOM
        "5": ("killed", 0, None, "admin_cancel", "scheduler"),  # cancelled by root; 0:15 its teardown
        "6": ("failed", 1, None, "unknown", "scheduler"),
    }
