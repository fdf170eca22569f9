"""Which cases of a large family of slow cases the default run keeps.

A family that compares two ways of doing one thing (the fast and the exact parse, small chunks
and whole reads) or mutates many inputs costs a second or more per case. The default run keeps
the cases named here (the ones that cover the family's distinct paths); the others are marked
`slow` and run by .ci/run's second pass (`pytest -m "slow or spark or browser"`), so nothing
is lost, only moved out of the 2-minute run.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

import pytest


def keep_by_default(values: Iterable[Any], keep: Collection[Any]) -> list[Any]:
    """`values` as parametrize values: those in `keep` run by default, the others only when slow
    tests run. A tuple value is unpacked (parametrize over several names)."""
    values = list(values)
    unknown = [k for k in keep if k not in values]
    assert not unknown, f"keep_by_default names cases that are not there: {unknown}"
    out: list[Any] = []
    for value in values:
        if value in keep:
            out.append(value)
        elif isinstance(value, tuple):
            out.append(pytest.param(*value, marks=pytest.mark.slow))
        else:
            out.append(pytest.param(value, marks=pytest.mark.slow))
    return out
