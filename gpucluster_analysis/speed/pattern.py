"""What a speed pattern is: the canonical metrics, the conversions to them, and the pattern
itself (patterns.toml's tables, validated by patterns.py, read line by line by reading.py)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

# canonical metric -> (unit it is reported in, priority band = priority // 100)
METRICS: dict[str, tuple[str, int]] = {
    "tflops_per_gpu": ("TFLOP/s/GPU", 5),
    # band 4 was MFU's: a model-FLOPs utilization is a percentage of a peak the script assumed,
    # no speed (issue #28), and no pattern reads it any more
    "tokens_per_s": ("tokens/s", 3),
    "samples_per_s": ("samples/s", 2),
    "iterations_per_s": ("it/s", 1),
}
CONVERSIONS = {
    "as_is": lambda v: v,
    "reciprocal": lambda v: 1.0 / v,
    "per_ms": lambda v: 1000.0 / v,
    "per_us": lambda v: 1_000_000.0 / v,
}
KINDS = ("step", "bar", "run_average")


@dataclass(frozen=True)
class Example:
    line: str
    value: float | None  # None for a counter-example
    source: str


# A value printed in thousands or millions (nanotron's `tokens_per_sec: 22.8K`): the `si` group.
SI_MULTIPLIERS = {"k": 1e3, "K": 1e3, "M": 1e6}


# eq=False: a pattern is equal only to itself and hashes by identity, so caching on a
# tuple of patterns costs nothing per log (hashing every field cost ~40% of a small log).
@dataclass(frozen=True, eq=False)
class SpeedPattern:
    id: str
    framework: str
    metric: str
    unit: str  # as printed
    per_gpu: bool
    kind: str
    priority: int
    regex_text: str
    prefilter: tuple[str, ...]
    convert: str | None = None  # when the regex has no `unit` group
    convert_by_unit: tuple[tuple[str, str], ...] = ()  # printed unit -> conversion
    description: str = ""
    examples: tuple[Example, ...] = ()
    counter_examples: tuple[Example, ...] = ()
    unless_text: str = ""  # where this matches (a bar's piece, a step pattern's line), the regex reads nothing
    source: str = ""
    min_samples: int = 1  # lines it must read before its samples can be a log's speed
    fallback: bool = False  # a generic key (speed/keys.py): read only where no other pattern reads anything
    # each value is the mean since the run started (detectron2's time, tf_cnn_benchmarks' images/sec):
    # the last one is the run's speed, and its unit says so
    running_mean: bool = False
    # Python's re, not RE2 (textmatch.py): these patterns ship with gca and are written not to
    # backtrack (tests/test_hostile_lines.py), and RE2's capture groups cost 3-9x per progress-bar line
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)
    unless: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "regex", re.compile(self.regex_text))
        object.__setattr__(self, "unless", re.compile(self.unless_text) if self.unless_text else None)

    @property
    def canonical_unit(self) -> str:
        return METRICS[self.metric][0]

    def to_canonical(self, raw: float, printed_unit: str | None) -> float | None:
        """The printed value in the canonical metric; None when it is not a usable speed
        (zero, negative, infinite, or a unit the pattern does not know)."""
        by_unit = dict(self.convert_by_unit)
        if printed_unit is None:
            name = self.convert if self.convert is not None else by_unit.get("")  # '': no unit printed
        else:
            name = by_unit.get(printed_unit, by_unit.get(printed_unit.lower()))
        if name is None or not raw > 0 or not math.isfinite(raw):
            return None
        return CONVERSIONS[name](raw)
