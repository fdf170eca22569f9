"""What a scheduler's own record says about why a job ended, defined here once (issue #28,
part 4; docs/domain.md, "The scheduler's evidence").

A log names a cause when it prints one; the scheduler knows things a log may not: that the
job ran out of time, that the node died, that it was preempted, who cancelled it, the exit
code and the signal. The tables below turn a job's record (its state word, exit code and
signal, the uid that cancelled it and its own uid) into a reason of the failure taxonomy
and say how it combines with the log's; db/fact_macros.py makes the SQL macros from them
(`scheduler_reason(...)`, `job_failure_reason(...)`, `failure_evidence(...)`,
`signal_name(...)`), which jobs.sql uses. Tests compute the same independently from the dumps.
"""

from __future__ import annotations

# A state word (sacct's State, Helios' and Acme's state column) that names the cause itself.
STATE_REASONS: dict[str, str] = {
    "TIMEOUT": "time_limit",
    "DEADLINE": "time_limit",  # could not finish by --deadline
    "OUT_OF_MEMORY": "host_oom",  # Slurm's cgroup memory limit: host memory, not the GPU's
    "NODE_FAIL": "node_fail",
    "BOOT_FAIL": "node_fail",
    "PREEMPTED": "preempted",
}
CANCELLED = "CANCELLED"
# States whose exit code or signal is the evidence: a job that failed by its own exit, and a
# COMPLETED one that failed by a step (Slurm: its own ExitCode 0:0, a step's non-zero, which gca
# takes from DerivedExitCode or the step rows as the job's exit code; 0:0 says nothing).
EXIT_STATES = frozenset({"FAILED", "LAUNCH_FAILED", "COMPLETED"})

# Cancels: by the job's own user (`CANCELLED by <uid>` of the job's UID) the taxonomy's
# user_kill; by root (uid 0) or another account than the job's, an operator's; by a uid
# whose relation to the job the dump cannot tell (no UID column), or by no uid at all, only
# that it was cancelled.
USER_CANCEL = "user_kill"
ADMIN_CANCEL = "admin_cancel"
UNKNOWN_CANCEL = "cancelled"
ROOT_UID = "0"

# Linux signal numbers (signal(7), x86 and ARM) to their names; a job killed by one of
# SEGFAULT_SIGNALS crashed (the taxonomy's segfault: SIGSEGV, bus error, illegal instruction,
# arithmetic fault); another signal ended it without saying why (unknown, its name kept).
SIGNALS: dict[int, str] = {
    1: "SIGHUP",
    2: "SIGINT",
    3: "SIGQUIT",
    4: "SIGILL",
    5: "SIGTRAP",
    6: "SIGABRT",
    7: "SIGBUS",
    8: "SIGFPE",
    9: "SIGKILL",
    10: "SIGUSR1",
    11: "SIGSEGV",
    12: "SIGUSR2",
    13: "SIGPIPE",
    14: "SIGALRM",
    15: "SIGTERM",
    16: "SIGSTKFLT",
    17: "SIGCHLD",
    18: "SIGCONT",
    19: "SIGSTOP",
    20: "SIGTSTP",
    21: "SIGTTIN",
    22: "SIGTTOU",
    23: "SIGURG",
    24: "SIGXCPU",
    25: "SIGXFSZ",
    26: "SIGVTALRM",
    27: "SIGPROF",
    28: "SIGWINCH",
    29: "SIGIO",
    30: "SIGPWR",
    31: "SIGSYS",
}
SEGFAULT_SIGNALS = frozenset({4, 7, 8, 11})
# Slurm's own dummy signal for a step its cgroup killed for memory (slurm.h SIG_OOM, 253), which
# sacct prints as 125 (253 & 0x7f): `OUT_OF_MEMORY 0:125`, and a COMPLETED job's failed step.
SLURM_OOM_SIGNAL = 125
SIGNALS[SLURM_OOM_SIGNAL] = "SIG_OOM"
SEGFAULT = "segfault"
UNNAMED = "unknown"  # a failure shown (an exit code, a signal) whose cause nothing names
NO_FAILURE = "none"

# Scheduler reasons that beat a cause the log names: the node died or the scheduler took it
# back, and what the log printed then (an NCCL timeout, a lost connection, a launcher's
# summary) followed from it; only a GPU fault the log shows is more specific.
OVERRIDING = ("node_fail", "preempted")
MORE_SPECIFIC_THAN_OVERRIDING = ("gpu_hw",)

# failure_evidence values: what the job's reason rests on.
EVIDENCE = ("log", "scheduler", "both", "none")
