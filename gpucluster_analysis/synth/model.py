"""The synthetic world's data types, shared by the workload, scheduler and writers.

Nothing here draws random numbers or does I/O. Times are int UTC epoch seconds.
Machines are numbered 0..M-1 (`m<i>` in the files) with `GPUS_PER_MACHINE` each.
"""

from __future__ import annotations

from dataclasses import dataclass, field

GPUS_PER_MACHINE = 8

# Failure reasons the generator writes logs for, with their domain.md category.
# Every id is one of the taxonomy's reasons.
REASON_CATEGORY: dict[str, str] = {
    "gpu_hw": "infrastructure",
    "node_fail": "infrastructure",
    "nccl_error": "infrastructure",
    "mpi_failure": "infrastructure",
    "cuda_oom": "framework",
    "host_oom": "framework",
    "import_error": "user",
    "key_error": "user",
    "file_not_found": "user",
    "nan_loss": "user",
}


@dataclass(frozen=True)
class Cluster:
    machines: int
    vc_names: tuple[str, ...]
    vc_quota: tuple[int, ...]  # GPUs each VC may hold at once
    user_names: tuple[str, ...]
    user_vc: tuple[int, ...]  # the VC each user submits to

    @property
    def gpus(self) -> int:
        return self.machines * GPUS_PER_MACHINE


@dataclass(frozen=True)
class PlannedAttempt:
    """What an attempt will do if nothing (a kill) interrupts it."""

    outcome: str  # "pass", "fail", or "launch_fail" (containers never started)
    duration: int  # seconds from placement to the planned end
    reason: str | None  # failure reason for "fail"/"launch_fail"


@dataclass
class JobSpec:
    """A submitted job: who, how big, and the attempts it would make on its own."""

    index: int
    job_id: str
    submit: int
    ready: int  # when the scheduler first considers it (submit + scheduling latency)
    vc: int
    user: int
    gpus: int
    plan: list[PlannedAttempt]
    relax_wait: int  # seconds after submit when it accepts a spread placement
    kill_kind: str | None  # None, "cancel" (before scheduling), "patience" (if still queued), "running"
    kill_delay: int  # from submit ("cancel", "patience") or from the first real start ("running")
    efficiency: float  # 0..1: how well the job keeps its GPUs busy on one server, alone
    util_noise: float  # per-minute standard deviation of its utilization, in points


@dataclass
class RealAttempt:
    """An attempt as it really happened in the simulation."""

    job: int
    start: int  # when it was placed
    end: int  # when its GPUs were released
    alloc: tuple[tuple[int, tuple[int, ...]], ...]  # ((machine, (gpu, ...)), ...)
    outcome: str  # "pass", "fail", "launch_fail", "killed"
    reason: str | None

    @property
    def occupies_gpus(self) -> bool:
        """Whether the job's processes ran on the GPUs (a launch failure never started them)."""
        return self.outcome != "launch_fail"


@dataclass
class RecordedAttempt:
    """An attempt as the job log writes it (what truth.json and gca see)."""

    real: RealAttempt
    start: int | None
    end: int | None
    alloc: tuple[tuple[int, tuple[int, ...]], ...]
    source_index: int = -1  # position in the job's `attempts` list in the JSON

    @property
    def gpus(self) -> int:
        return sum(len(g) for _, g in self.alloc)

    @property
    def attributable(self) -> bool:
        """Whether utilization samples can belong to it (domain.md: start, end and GPUs known)."""
        return self.start is not None and self.end is not None and bool(self.alloc)


@dataclass
class JobOutcome:
    status: str  # "passed", "failed", "killed"
    attempts: list[RealAttempt] = field(default_factory=list)
    killed_at: int | None = None  # when a kill ended the job (queued or running)
