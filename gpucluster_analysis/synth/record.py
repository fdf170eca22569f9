"""Turn what really happened into what the job log records, quirks included.

Contract: `record_attempts` returns, per job, the attempts in the order the
JSON lists them, each with the start, end and allocation the log will show and
its `source_index`. The quirks are the ones the real Philly log has, placed
deterministically (at least one of each whenever the trace has a candidate):

* launch failures: start "None", empty detail (the containers never started);
* a killed job whose last attempt never got an end ("None");
* an attempt that ran but whose placement was not recorded (empty detail);
* attempts listed out of chronological order.

Only the record changes; the GPUs an attempt really held stay busy in the
utilization files.
"""

from __future__ import annotations

import numpy as np

from gpucluster_analysis.synth.model import JobOutcome, RecordedAttempt

END_MISSING_FRACTION = 0.3  # of jobs killed while running
EMPTY_DETAIL_FRACTION = 0.004  # of attempts that ran
SHUFFLED_FRACTION = 0.05  # of jobs with more than one attempt


def _pick(rng: np.random.Generator, candidates: list[int], fraction: float) -> set[int]:
    if not candidates:
        return set()
    count = min(len(candidates), max(1, round(fraction * len(candidates))))
    return {int(i) for i in rng.choice(candidates, size=count, replace=False)}


def record_attempts(outcomes: list[JobOutcome], rng: np.random.Generator) -> list[list[RecordedAttempt]]:
    records: list[list[RecordedAttempt]] = []
    for outcome in outcomes:
        row = []
        for a in outcome.attempts:
            if a.outcome == "launch_fail":
                row.append(RecordedAttempt(real=a, start=None, end=a.end, alloc=()))
            else:
                row.append(RecordedAttempt(real=a, start=a.start, end=a.end, alloc=a.alloc))
        records.append(row)

    killed_running = [j for j, o in enumerate(outcomes) if o.attempts and o.attempts[-1].outcome == "killed"]
    for j in sorted(_pick(rng, killed_running, END_MISSING_FRACTION)):
        records[j][-1].end = None

    ran = [(j, k) for j, row in enumerate(records) for k, r in enumerate(row) if r.real.occupies_gpus]
    for i in sorted(_pick(rng, list(range(len(ran))), EMPTY_DETAIL_FRACTION)):
        j, k = ran[i]
        records[j][k].alloc = ()

    # Reversal shows only among attempts with a start, so pick jobs with two of those.
    multi = [j for j, row in enumerate(records) if sum(r.start is not None for r in row) > 1]
    for j in sorted(_pick(rng, multi, SHUFFLED_FRACTION)):
        records[j].reverse()

    for row in records:
        for k, r in enumerate(row):
            r.source_index = k
    return records
