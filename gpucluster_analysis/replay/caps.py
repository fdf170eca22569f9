"""Per-user GPU caps of one cluster, and what each capped user holds under them.

Slurm caps a user's GPUs in two ways that sacctmgr prints (table `quotas`): a user
association's GrpTRES caps the user's jobs in that account, and a QOS's MaxTRESPU caps each
user's jobs in that QOS. A cap group is one user under one cap: (account, user) or (QOS,
user). A job waiting under a cap group is held by it at an instant when the GPUs the group's
attempts hold then, plus the job's own, exceed the cap (checked before the VC's quota, as
Slurm checks QOS and user limits before the account's).

What a group holds is swept from its own attempts' starts and ends on the cluster's event
grid, only over the intervals a class of waiting jobs asks about: no per-second loop and no
array per user over the whole trace.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from gpucluster_analysis.replay.timeline import EPS

_ASSOC, _QOS = "user", "qos_user"


@dataclass
class UserCaps:
    """The cap groups of one source: their caps, their holdings, and each job's groups."""

    caps: np.ndarray  # GPUs per group
    start_i: np.ndarray  # per holding row: the grid interval it starts in
    end_i: np.ndarray  # ... and ends in (exclusive)
    gpus: np.ndarray  # per holding row
    members: list[np.ndarray]  # per group: its holding rows
    job_assoc: np.ndarray  # per job: its association cap group, -1 none
    job_qos: np.ndarray  # per job: its QOS cap group, -1 none

    @property
    def any(self) -> bool:
        return len(self.caps) > 0

    _held: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    def held(self, group: int) -> tuple[np.ndarray, np.ndarray]:
        """The group's holdings swept once: (sorted intervals where what it holds changes,
        what it holds from each on)."""
        if group not in self._held:
            rows = self.members[group]
            at, inverse = np.unique(np.concatenate([self.start_i[rows], self.end_i[rows]]), return_inverse=True)
            change = np.bincount(inverse, weights=np.concatenate([self.gpus[rows], -self.gpus[rows]]),
                                 minlength=len(at))
            self._held[group] = at, np.round(np.cumsum(change), 6)
        return self._held[group]

    def over(self, part: np.ndarray, gpus: float, groups: tuple[int, ...]) -> np.ndarray | None:
        """On the grid intervals `part`: whether a job of `gpus` GPUs is over one of its
        groups' caps; None when it has no group. A lookup in each group's own sweep, so a
        user's many waits never re-sweep the user's many holdings."""
        out = None
        for group in groups:
            if group < 0:
                continue
            at, held_from = self.held(group)
            k = np.searchsorted(at, part, side="right") - 1
            held = np.where(k >= 0, held_from[np.maximum(k, 0)], 0.0)
            over = held + gpus > self.caps[group] + EPS
            out = over if out is None else out | over
        return out


def no_caps(n_jobs: int) -> UserCaps:
    empty = np.zeros(0)
    return UserCaps(empty, empty.astype(np.int64), empty.astype(np.int64), empty, [],
                    np.full(n_jobs, -1, dtype=np.int64), np.full(n_jobs, -1, dtype=np.int64))


def build_user_caps(T: np.ndarray, limits: pl.DataFrame, holdings: pl.DataFrame, jobs: pl.DataFrame) -> UserCaps:
    """Cap groups from `limits` (replay_quotas rows of one source: kind, vc, user_name, qos, gpus),
    with the holdings (started attempts' rows: vc, user_name, qos, start_s, end_s, gpus known)
    and the jobs (vc, user_name, qos) of the same source."""
    limits = limits.filter(pl.col("kind").is_in([_ASSOC, _QOS]) & pl.col("gpus").is_not_null())
    if limits.is_empty():
        return no_caps(jobs.height)
    by_assoc = {(r["vc"], r["user_name"]): float(r["gpus"]) for r in limits.filter(pl.col("kind") == _ASSOC).iter_rows(named=True)}
    by_qos = {r["qos"]: float(r["gpus"]) for r in limits.filter(pl.col("kind") == _QOS).iter_rows(named=True)}
    code: dict[tuple[str, str | None, str | None], int] = {}
    caps: list[float] = []

    def group_of(kind: str, holder: str | None, user: str | None, cap: float | None) -> int:
        if cap is None or user is None:
            return -1
        key = (kind, holder, user)
        if key not in code:
            code[key] = len(caps)
            caps.append(cap)
        return code[key]

    users, vcs, qoses = (jobs.get_column(c).to_list() for c in ("user_name", "vc", "qos"))
    job_assoc = np.array([group_of(_ASSOC, v, u, by_assoc.get((v, u))) for v, u in zip(vcs, users, strict=True)],
                         dtype=np.int64)
    job_qos = np.array([group_of(_QOS, q, u, by_qos.get(q)) for q, u in zip(qoses, users, strict=True)], dtype=np.int64)
    # Each holding counts toward the (account, user) and the (QOS, user) group it belongs to, where a waiting job has one.
    h_users, h_vcs, h_qoses = (holdings.get_column(c).to_list() for c in ("user_name", "vc", "qos"))
    h_assoc = np.array([code.get((_ASSOC, v, u), -1) for v, u in zip(h_vcs, h_users, strict=True)], dtype=np.int64)
    h_qos = np.array([code.get((_QOS, q, u), -1) for q, u in zip(h_qoses, h_users, strict=True)], dtype=np.int64)
    members = [np.zeros(0, dtype=np.int64)] * len(caps)
    for groups in (h_assoc, h_qos):
        rows = np.flatnonzero(groups >= 0)
        order = rows[np.argsort(groups[rows], kind="stable")]
        for g, part in zip(*_split_by(groups[order], order), strict=True):
            members[g] = part
    return UserCaps(
        caps=np.array(caps, dtype=float),
        start_i=np.searchsorted(T, holdings.get_column("start_s").to_numpy().astype(float)),
        end_i=np.searchsorted(T, holdings.get_column("end_s").to_numpy().astype(float)),
        gpus=holdings.get_column("gpus").to_numpy().astype(float),
        members=members, job_assoc=job_assoc, job_qos=job_qos,
    )


def _split_by(sorted_keys: np.ndarray, values: np.ndarray) -> tuple[list[int], list[np.ndarray]]:
    """Runs of equal keys: (key of each run, its values)."""
    if not sorted_keys.size:
        return [], []
    breaks = np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1
    return [int(k) for k in sorted_keys[np.r_[0, breaks]]], np.split(values, breaks)
