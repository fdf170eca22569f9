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
_KEYS = ("vc", "user_name", "qos")
# a missing name, as a value that is no name: keys compare as Python's tuples did, None equal to None
_NULL = "\x00"


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
            change = np.bincount(
                inverse, weights=np.concatenate([self.gpus[rows], -self.gpus[rows]]), minlength=len(at)
            )
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
    return UserCaps(
        empty,
        empty.astype(np.int64),
        empty.astype(np.int64),
        empty,
        [],
        np.full(n_jobs, -1, dtype=np.int64),
        np.full(n_jobs, -1, dtype=np.int64),
    )


def build_user_caps(T: np.ndarray, limits: pl.DataFrame, holdings: pl.DataFrame, jobs: pl.DataFrame) -> UserCaps:
    """Cap groups from `limits` (replay_quotas rows of one source: kind, vc, user_name, qos, gpus),
    with the holdings (started attempts' rows: vc, user_name, qos, start_s, end_s, gpus known)
    and the jobs (vc, user_name, qos) of the same source."""
    limits = limits.filter(pl.col("kind").is_in([_ASSOC, _QOS]) & pl.col("gpus").is_not_null())
    if limits.is_empty():
        return no_caps(jobs.height)
    # Each cap group gets a number by its first job, association groups first; a holding
    # counts toward the (account, user) and (QOS, user) groups of its own, where a job has one.
    jobs = jobs.select(*_KEYS).with_columns(pl.col(k).cast(pl.String).fill_null(_NULL) for k in _KEYS)
    holdings_keys = holdings.select(*_KEYS).with_columns(pl.col(k).cast(pl.String).fill_null(_NULL) for k in _KEYS)
    caps: list[np.ndarray] = []
    job_groups: list[np.ndarray] = []
    holding_groups: list[np.ndarray] = []
    for kind, holder in ((_ASSOC, "vc"), (_QOS, "qos")):
        key = [holder, "user_name"] if kind == _ASSOC else [holder]
        limit = (
            limits.filter(pl.col("kind") == kind)
            .select(
                *(pl.col(k).cast(pl.String).fill_null(_NULL) for k in key), pl.col("gpus").cast(pl.Float64).alias("cap")
            )
            .unique(key, keep="last", maintain_order=True)
        )  # a key listed twice: its last limit
        capped = jobs.with_row_index("row").join(limit, on=key, how="inner").filter(pl.col("user_name") != _NULL)
        groups = (
            capped.group_by(holder, "user_name")
            .agg(pl.col("row").min().alias("first"), pl.col("cap").first())
            .sort("first")
            .with_row_index("group", offset=sum(len(c) for c in caps))
        )
        caps.append(groups.get_column("cap").to_numpy())
        job_groups.append(_group_per_row(jobs, groups, holder))
        holding_groups.append(_group_per_row(holdings_keys, groups, holder))
    job_assoc, job_qos = job_groups
    n_groups = sum(len(c) for c in caps)
    members = [np.zeros(0, dtype=np.int64)] * n_groups
    for holding in holding_groups:
        rows = np.flatnonzero(holding >= 0)
        order = rows[np.argsort(holding[rows], kind="stable")]
        for g, part in zip(*_split_by(holding[order], order), strict=True):
            members[g] = part
    return UserCaps(
        caps=np.concatenate(caps).astype(float),
        start_i=np.searchsorted(T, holdings.get_column("start_s").to_numpy().astype(float)),
        end_i=np.searchsorted(T, holdings.get_column("end_s").to_numpy().astype(float)),
        gpus=holdings.get_column("gpus").to_numpy().astype(float),
        members=members,
        job_assoc=job_assoc,
        job_qos=job_qos,
    )


def _group_per_row(rows: pl.DataFrame, groups: pl.DataFrame, holder: str) -> np.ndarray:
    """Each row's group (by its holder and user), -1 where it has none."""
    found = rows.join(
        groups.select(holder, "user_name", "group"), on=[holder, "user_name"], how="left", maintain_order="left"
    )
    return found.get_column("group").cast(pl.Int64).fill_null(-1).to_numpy()


def _split_by(sorted_keys: np.ndarray, values: np.ndarray) -> tuple[list[int], list[np.ndarray]]:
    """Runs of equal keys: (key of each run, its values)."""
    if not sorted_keys.size:
        return [], []
    breaks = np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1
    return [int(k) for k in sorted_keys[np.r_[0, breaks]]], np.split(values, breaks)
