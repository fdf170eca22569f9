"""gca's wait split beside Slurm's own pending reasons, per job, for one slurm_live.sh run.

    python scripts/slurm_live_compare.py OUT_DIR

Reads OUT_DIR/squeue.log (the snapshots, read here without gca), OUT_DIR/sacct.txt (job
names) and OUT_DIR/report/jobs.csv (gca's split). For each job that Slurm listed as pending,
its main reason is the one most of its snapshots give, gca's main cause the one most of its
waiting seconds went to (none on a tie). Prints one line per such job, then per reason how many of its jobs
gca gave each main cause. Exits 1 when most jobs held mostly for AssocGrpGRES are not
fair_share, or most held mostly for QOSMaxGRESPerUser not user_limit. Standard library only.
"""

from __future__ import annotations

import csv
import re
import sys
from collections import Counter
from pathlib import Path

CAUSES = ("user_limit", "fair_share", "capacity", "fragmentation", "other")
EXPECTED = {"AssocGrpGRES": "fair_share", "QOSMaxGRESPerUser": "user_limit"}
_ARRAY = re.compile(r"^(\d+)_\[([^\]]+)\]$")


def job_ids(field: str) -> list[str]:
    """squeue's %i as sacct's job ids: 12_[3-5%2] is 12_3, 12_4, 12_5; 12+1 is job 12."""
    field = field.strip().split("+", 1)[0]
    m = _ARRAY.match(field)
    if not m:
        return [field]
    ids = []
    for part in m.group(2).split("%", 1)[0].split(","):
        lo, _, hi = part.partition("-")
        ids += [f"{m.group(1)}_{t}" for t in range(int(lo), int(hi or lo) + 1)]
    return ids


def pending_reasons(log: Path) -> dict[str, Counter[str]]:
    """Per job, how many snapshots gave each reason ("None": not yet looked at, left out)."""
    seen: dict[str, Counter[str]] = {}
    for line in log.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        field, _, reason = line.partition("|")
        if reason.strip() in ("", "None", "REASON"):
            continue
        for job in job_ids(field):
            seen.setdefault(job, Counter())[reason.strip()] += 1
    return seen


def main_of(counts: dict[str, float]) -> str | None:
    """The key with strictly the largest value; None when all are 0 or two share the largest
    (a job split evenly was held mostly for neither)."""
    ranked = sorted(counts.values(), reverse=True)
    if not ranked or ranked[0] <= 0 or (len(ranked) > 1 and ranked[1] == ranked[0]):
        return None
    return max(counts, key=lambda k: counts[k])


def compare(out: Path) -> tuple[list[dict[str, object]], dict[str, Counter[str | None]]]:
    names = {}
    with (out / "sacct.txt").open() as f:
        for row in csv.DictReader(f, delimiter="|"):
            names.setdefault(row["JobID"], row["JobName"])
    with (out / "report" / "jobs.csv").open() as f:
        jobs = {r["job_id"]: r for r in csv.DictReader(f)}
    rows, by_reason = [], {}
    for job, reasons in sorted(pending_reasons(out / "squeue.log").items(), key=lambda kv: _order(kv[0])):
        split = {c: float(jobs.get(job, {}).get(f"wait_{c}_s") or 0) for c in CAUSES}
        reason, cause = main_of(dict(reasons)), main_of(split)
        rows.append(
            {
                "job": job,
                "name": names.get(job, "?"),
                "reasons": reasons,
                "split": split,
                "reason": reason,
                "cause": cause,
            }
        )
        by_reason.setdefault(reason, Counter())[cause] += 1
    return rows, by_reason


def _order(job: str) -> tuple[int, int]:
    head, _, task = job.partition("_")
    return int(head), int(task or -1)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: slurm_live_compare.py OUT_DIR", file=sys.stderr)
        return 2
    out = Path(argv[0])
    missing = [p for p in ("squeue.log", "sacct.txt", "report/jobs.csv") if not (out / p).is_file()]
    if missing:
        print(
            f"slurm_live_compare: error: {out} has no {', '.join(missing)} (run scripts/slurm_live.sh first)",
            file=sys.stderr,
        )
        return 2
    rows, by_reason = compare(out)
    print(f"{'job':<10} {'name':<15} {'Slurm: snapshots by reason':<44} gca: seconds by cause")
    for r in rows:
        reasons = ", ".join(f"{k} {v}" for k, v in r["reasons"].most_common())  # a Counter
        split = ", ".join(f"{c} {s:.0f}" for c, s in r["split"].items() if s)  # a dict
        print(f"{r['job']:<10} {r['name']:<15} {reasons:<44} {split or '-'}")
    print("\nmain reason -> gca's main cause (jobs)")
    ok = True
    for reason, causes in sorted(by_reason.items(), key=lambda kv: -sum(kv[1].values())):
        total = sum(causes.values())
        line = ", ".join(f"{c or 'none (a tie)'} {n}" for c, n in causes.most_common())
        print(f"  {reason}: {total} jobs: {line}")
        if reason in EXPECTED and causes[EXPECTED[reason]] * 2 <= total:
            ok = False
            print(f"    FAIL: fewer than half are {EXPECTED[reason]}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
