"""The values of Slurm's text output: sacct job ids, states, times, durations, TRES and GRES
lists, exit codes; each parser says what a value means or raises ValueError.

The exact way of reading a sacct line (sacct_exact.py) and the fast way (sacct_fast.py) both
read their values with these, and scontrol.py reads GRES with split_gres."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from gpucluster_analysis.bounds import FIRST_YEAR, LAST_YEAR
from gpucluster_analysis.timezones import to_utc_python

# the characters of a line kept with its row (staged, rejected)
TEXT_LIMIT = 500

# 123 | 123.batch | 123_4 | 123_[0-9%2] | 123+1 | 123+1.0 | 123.0+1 (a het step of job 123)
JOB_ID = re.compile(
    r"^(?P<job>\d+(?:_(?:\d+|\[[^\]]*\]))?)(?:\+(?P<het>\d+))?(?:\.(?P<step>[A-Za-z0-9_\-]+(?:\+\d+)?))?$"
)

# sacct state word -> jobs.status. Requeue states are handled apart (see status_of).
STATUS_OF_STATE = {
    "COMPLETED": "passed",
    "FAILED": "failed",
    "OUT_OF_MEMORY": "failed",
    "LAUNCH_FAILED": "failed",
    "BOOT_FAIL": "node_fail",  # the node failed to boot for the job: infrastructure, like NODE_FAIL
    "NODE_FAIL": "node_fail",
    "CANCELLED": "killed",
    "REVOKED": "killed",  # federation: a sibling started the job elsewhere
    "TIMEOUT": "timeout",
    "DEADLINE": "timeout",  # ended (or never started) because it could not finish by --deadline
    "PREEMPTED": "preempted",
    "RUNNING": "running",
    "SUSPENDED": "running",
    "RESIZING": "running",
    "COMPLETING": "running",
    "CONFIGURING": "running",
    "SIGNALING": "running",
    "STAGE_OUT": "running",
    "STOPPED": "running",
    "PENDING": "pending",
    "RESV_DEL_HOLD": "pending",
}
# A run that ended because the job went back to the queue.
REQUEUE_STATES = frozenset({"REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "SPECIAL_EXIT"})
KNOWN_STATES = frozenset(STATUS_OF_STATE) | REQUEUE_STATES

MISSING = frozenset({"", "unknown", "none", "n/a", "(null)"})
SACCT_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}$")
_DURATION = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?(?:\.\d+)?$")
NO_LIMIT = frozenset({"unlimited", "partition_limit", "invalid", "none", ""})
EXIT_CODE = re.compile(r"^(-?\d+):(-?\d+)$")
_GPU_TYPE = re.compile(r"^[A-Za-z0-9_.\-]+$")  # a100, a100_3g.20gb, nvidia_h100-80gb
# Counts (GPUs, nodes, het offsets, exit codes) beyond this are typos; the staging columns are 32-bit.
MAX_COUNT = 2**31 - 1


def parse_job_id(text: str) -> tuple[str, int | None, str | None] | None:
    """(job_id, het_offset, step) of a sacct JobID, or None when it is not one.

    job_id keeps the array task (`123_4`, pending `123_[0-9]`): every array task is its
    own job. A heterogeneous job's components (`123+0`, `123+1`) share job_id `123`.
    """
    match = JOB_ID.match(text)
    if not match:
        return None
    het = match.group("het")
    if het is not None and int(het) > MAX_COUNT:  # het_offset is a 32-bit column
        return None
    return match.group("job"), (int(het) if het is not None else None), match.group("step")


def parse_state(text: str) -> tuple[str, str | None]:
    """(state word, canceller uid) of `CANCELLED by 1234`, `COMPLETED`, ..."""
    parts = text.split()
    if not parts:
        return "", None
    word = parts[0].upper()
    by = parts[2] if len(parts) >= 3 and parts[1].lower() == "by" else None
    return word, by


def status_of(state: str, started: bool) -> str:
    """jobs.status vocabulary for one sacct row; a requeued run that had started was preempted."""
    if state in REQUEUE_STATES:
        return "preempted" if started else "pending"
    return STATUS_OF_STATE.get(state, "unknown")


class YearOutOfRange(ValueError):
    """A well-formed time in a year whose zone rules gca does not know."""


def parse_time(text: str, zone: str = "UTC") -> str | None:
    """'YYYY-MM-DD HH:MM:SS' (naive local) of a sacct time; None for Unknown/None/empty.

    Epoch seconds (sites that set SLURM_TIME_FORMAT=%s) come back as '@YYYY-MM-DD HH:MM:SS',
    already UTC. Slurm's unset time (0) is None however it is written: `0`, or the epoch in
    the site's zone (`1969-12-31T19:00:00` in New York). Raises ValueError for anything else,
    and for years outside the window every reader holds times to (bounds.py).
    """
    if text.lower() in MISSING:
        return None
    if text.isdecimal():
        seconds = int(text)
        if seconds == 0:
            return None
        if seconds >= 2**40:  # past any year gca reads, and past what datetime holds
            raise YearOutOfRange(text)
        utc = datetime(1970, 1, 1) + timedelta(seconds=seconds)
        if not FIRST_YEAR <= utc.year <= LAST_YEAR:
            raise YearOutOfRange(text)
        return "@" + utc.strftime("%Y-%m-%d %H:%M:%S")
    if not SACCT_TIME.match(text):
        raise ValueError(text)
    try:
        local = datetime.fromisoformat(text)  # a real date: 2024-02-30 fails here
    except ValueError:
        raise ValueError(text) from None
    if not FIRST_YEAR <= local.year <= LAST_YEAR:
        if local.year in (1969, 1970) and to_utc_python(local, zone) == datetime(1970, 1, 1):
            return None
        raise YearOutOfRange(text)
    return text.replace("T", " ")


def parse_duration_s(text: str) -> int | None:
    """Seconds of `[D-]HH:MM:SS`, `MM:SS`, `D-HH:MM`, `D-HH`; None when unlimited. ValueError otherwise."""
    if text.lower() in NO_LIMIT:
        return None
    match = _DURATION.match(text)
    if not match:
        raise ValueError(text)
    days_text, a, b, c = match.groups()
    days = int(days_text) if days_text else 0
    numbers = [int(x) for x in (a, b, c) if x is not None]
    if days_text:  # Slurm's D-HH, D-HH:MM, D-HH:MM:SS
        numbers += [0] * (3 - len(numbers))
    elif len(numbers) == 1:  # a bare number is minutes (TimelimitRaw)
        numbers = [0, numbers[0], 0]
    elif len(numbers) == 2:  # MM:SS
        numbers = [0, *numbers]
    hours, minutes, seconds = numbers
    total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    if minutes >= 60 or seconds >= 60 or total >= 2**63:
        raise ValueError(text)
    return total


def parse_limit_minutes(text: str) -> int | None:
    """Seconds of a TimelimitRaw (minutes); None when it is not a number (UNLIMITED, ...)."""
    if not text.isdecimal():
        return None
    seconds = int(text) * 60
    if seconds >= 2**63:
        raise ValueError(text)
    return seconds


@dataclass(frozen=True)
class Tres:
    gpus: int  # untyped gres/gpu, else the sum of the typed keys; 0 without any
    model: str | None  # the type(s) of typed gres/gpu:<type> keys
    nodes: int | None
    keyed: bool = True  # a GPU key was there (gres/gpu=0 included): the site accounts GPUs in TRES


def parse_tres(text: str) -> Tres | None:
    """GPUs, GPU model and nodes of an AllocTRES/ReqTRES list; None when empty. ValueError when unreadable."""
    if text.lower() in MISSING:
        return None
    untyped: int | None = None
    typed: dict[str, int] = {}
    nodes = None
    for item in text.split(","):
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise ValueError(item)
        if key == "gres/gpu" or key.startswith("gres/gpu:") or key == "node":
            if not value.isdecimal() or int(value) > MAX_COUNT:
                raise ValueError(item)
            if key == "gres/gpu":
                untyped = int(value)
            elif key == "node":
                nodes = int(value)
            else:
                gpu_type = key.split(":", 1)[1]
                if not _GPU_TYPE.match(gpu_type):  # gres/gpu:tesla:2(S:0-1) is GRES syntax, not TRES
                    raise ValueError(item)
                typed[gpu_type] = typed.get(gpu_type, 0) + int(value)
    gpus = untyped if untyped is not None else sum(typed.values())
    model = ",".join(sorted(typed)) if typed else None
    return Tres(gpus=gpus, model=model, nodes=nodes, keyed=untyped is not None or bool(typed))


def parse_gres(text: str) -> Tres | None:
    """Old sacct AllocGRES/ReqGRES (`gpu:2`, `gpu:tesla:2`, `gpu:(null):2(IDX:0-1)`) as a Tres without nodes."""
    if text.lower() in MISSING:
        return None
    gpus, models, keyed = 0, set(), False
    for entry in split_gres(text):
        parts = re.sub(r"\(.*$", "", entry.strip()).split(":")
        if parts[0] != "gpu":
            continue
        if len(parts) not in (2, 3) or not parts[-1].isdecimal() or int(parts[-1]) > MAX_COUNT:
            raise ValueError(entry)
        gpus += int(parts[-1])
        keyed = True
        if len(parts) == 3 and parts[1] != "(null)":
            models.add(parts[1])
    return Tres(gpus=gpus, model=",".join(sorted(models)) or None, nodes=None, keyed=keyed)


def parse_exit(text: str) -> tuple[int | None, int | None]:
    if text.lower() in MISSING:
        return None, None
    match = EXIT_CODE.match(text)
    if not match or max(abs(int(match.group(1))), abs(int(match.group(2)))) > MAX_COUNT:
        raise ValueError(text)
    return int(match.group(1)), int(match.group(2))


def split_gres(text: str) -> list[str]:
    """Entries of a GRES value, split at commas outside parentheses."""
    entries, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            entries.append(text[start:i])
            start = i + 1
    entries.append(text[start:])
    return [e for e in entries if e]
