"""Slurm hostlist expressions: `gpu[01-04,07]`, `c1-[9-10]`, `rack[1-2]-n[01-02],login1`.

A hostlist is a comma-separated list of names; a name may hold bracketed ranges (commas
inside brackets separate ranges, not names), several groups multiply out, and a range
keeps the zero padding of its lower bound (`[08-10]` -> 08, 09, 10). `None assigned`,
`(null)` and the empty string mean no hosts.
"""

from __future__ import annotations

import re

from gpucluster_analysis.bounds import MAX_NODES_PER_JOB

# A job never spans more hosts than this; a bigger expansion is a typo, not a job.
MAX_HOSTS = MAX_NODES_PER_JOB

NO_HOSTS = frozenset({"", "none assigned", "(null)", "none", "n/a"})

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


class HostlistError(ValueError):
    """The text is not a hostlist expression; the message says why."""


def expand_hostlist(text: str) -> list[str]:
    """The host names of a hostlist expression, in order, without duplicates."""
    text = text.strip()
    if text.lower() in NO_HOSTS:
        return []
    hosts: list[str] = []
    seen: set[str] = set()
    for name in _split_top_level(text):
        for host in _expand_name(name):
            if host not in seen:
                seen.add(host)
                hosts.append(host)
                if len(hosts) > MAX_HOSTS:
                    raise HostlistError(f"more than {MAX_HOSTS} hosts")
    return hosts


def _split_top_level(text: str) -> list[str]:
    names, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
            if depth > 1:
                raise HostlistError("nested '['")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError("']' without '['")
        elif ch == "," and depth == 0:
            names.append(text[start:i])
            start = i + 1
    if depth:
        raise HostlistError("'[' without ']'")
    names.append(text[start:])
    for name in names:
        if not name.strip() or any(c.isspace() for c in name):
            raise HostlistError(f"bad host name {name!r}")
    return names


def _expand_name(name: str) -> list[str]:
    # Split into literal parts and bracket groups: 'rack[1-2]-n[01-02]' -> 'rack', [1-2], '-n', [01-02]
    pieces = re.split(r"(\[[^\[\]]*+\])", name)  # [^\[\]]: one bracket's scan ends at the next, linear in "[[[["
    expansions = [""]
    for piece in pieces:
        if piece.startswith("["):
            values = _expand_group(piece[1:-1])
            if len(expansions) * len(values) > MAX_HOSTS:
                raise HostlistError(f"more than {MAX_HOSTS} hosts")
            expansions = [prefix + v for prefix in expansions for v in values]
        else:
            expansions = [prefix + piece for prefix in expansions]
    return expansions


def _expand_group(group: str) -> list[str]:
    values: list[str] = []
    for part in group.split(","):
        match = _RANGE.match(part.strip())
        if not match:
            raise HostlistError(f"bad range {part!r}")
        low_text, high_text = match.group(1), match.group(2)
        low = int(low_text)
        high = int(high_text) if high_text is not None else low
        if high < low:
            raise HostlistError(f"range {part!r} runs backwards")
        if high - low >= MAX_HOSTS:
            raise HostlistError(f"more than {MAX_HOSTS} hosts")
        width = len(low_text)
        values.extend(str(n).zfill(width) for n in range(low, high + 1))
    return values
