"""Find the training speed a job log prints and summarize it (contract: speed/__init__.py).

How a log is read: one regex of every pattern's prefilter literals, factored into a trie
(the classifier's), scans the lower-cased bytes; only the lines it hits are decoded, and
on each only the patterns one of whose literals the line holds are run, on each \\r piece
up to its PIECE_CHARS-th character (no pattern then backtracks long on a hostile line):
`finditer` for step and run-average patterns; for bar patterns `match` at the start of
each piece, last piece first, skipping earlier states of a bar already read.
`#015` (syslog's escaped carriage return) counts as \\r.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import statistics
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from gpucluster_analysis.logscan import HEAD_BYTES, TAIL_BYTES, lines_holding, read_parts, trie_pattern
from gpucluster_analysis.speed.pattern import SpeedPattern
from gpucluster_analysis.speed.patterns import load_patterns
from gpucluster_analysis.speed.reading import line_hits

__all__ = [
    "SLOW_START_FRACTION",
    "WARMUP_FRACTION",
    "SpeedSample",
    "SpeedSummary",
    "default_patterns",
    "extract_speed",
    "extract_speed_bytes",
    "read_speed",
    "summarize",
    "warmup_count",
]

# after the unit of a pattern whose values are means since the start (detectron2, tf_cnn_benchmarks)
RUNNING_MEAN_UNIT = " (mean since start)"
WARMUP_FRACTION = 0.10  # the first ceil(10%) of the samples (at least one, when there are 3 or more)
SLOW_START_FRACTION = 0.5  # then every sample before the first reaching half the median of the rest


@dataclass(frozen=True)
class SpeedSample:
    line_number: int | None  # None: in the tail of a file cut by read_speed (lines in between not counted)
    value: float  # in the summary's canonical metric and unit (higher is faster)
    raw: float  # the number as printed
    raw_unit: str  # the unit as printed (the pattern's, or the matched one: it/s, s/it, ms, ...)


@dataclass(frozen=True)
class SpeedSummary:
    """The speed of one log: the winning pattern's samples and their statistics over the
    steady part of the run (the samples after `warmup_dropped`)."""

    metric: str  # tflops_per_gpu, tokens_per_s, samples_per_s or iterations_per_s
    unit: str  # TFLOP/s/GPU, tokens/s, samples/s, it/s
    pattern_id: str
    framework: str
    per_gpu: bool  # the value is per GPU (else for the whole job)
    kind: str  # step, bar or run_average (see patterns.toml)
    median: float
    p25: float
    p75: float
    iqr: float  # p75 - p25 (quartiles by linear interpolation, statistics.quantiles "inclusive")
    mad: float  # median absolute deviation from the median (unscaled)
    samples_seen: int  # len(samples)
    samples_used: int  # samples the statistics are over
    warmup_dropped: int  # leading samples left out as warm-up
    samples: tuple[SpeedSample, ...]  # every sample of the winning pattern, in log order
    # (pattern id, metric, samples) of every pattern that matched, winner first
    candidates: tuple[tuple[str, str, int], ...] = ()
    truncated: bool = False  # read_speed read only a head and a tail of the file
    bytes_read: int | None = None  # by read_speed

    @property
    def steady(self) -> tuple[SpeedSample, ...]:
        """The samples the statistics are over."""
        return self.samples[self.warmup_dropped :]


@lru_cache(maxsize=1)
def default_patterns() -> tuple[SpeedPattern, ...]:
    """The shipped patterns (loaded and validated once)."""
    return tuple(load_patterns())


@dataclass(frozen=True)
class _Plan:
    trigger: re.Pattern[bytes]  # any prefilter literal, over lower-cased bytes
    owners: tuple[tuple[str, tuple[int, ...]], ...]  # literal -> indices of the patterns it lets through


@lru_cache(maxsize=8)
def _plan(patterns: tuple[SpeedPattern, ...]) -> _Plan:
    owners: dict[str, list[int]] = {}
    for i, p in enumerate(patterns):
        for lit in p.prefilter:
            owners.setdefault(lit, []).append(i)
    trigger = re.compile(trie_pattern(sorted(owners)).encode("utf-8"))
    return _Plan(trigger, tuple((lit, tuple(ids)) for lit, ids in sorted(owners.items())))


def _main_bar_family(hits: list[tuple[str, int, SpeedSample]]) -> str:
    """The family the job spent the most time in: per family, the sum of elapsed-time
    increases between its samples, a decrease starting a new bar."""
    spent: dict[str, int] = {}
    count: dict[str, int] = {}
    prev: dict[str, int] = {}
    for family, elapsed, _ in hits:
        before = prev.get(family, 0)
        spent[family] = spent.get(family, 0) + (elapsed - before if elapsed >= before else elapsed)
        prev[family] = elapsed
        count[family] = count.get(family, 0) + 1
    order = list(spent)  # first seen first: the tie-break of last resort
    return max(order, key=lambda f: (spent[f], count[f], -order.index(f)))


def warmup_count(values: list[float]) -> int:
    """How many leading samples are warm-up: with 3 or more samples, the first ceil(10%)
    (at least one), then every sample before the first one that reaches half the median
    of the remaining samples (compilation, autotuning, a cold data cache)."""
    n = len(values)
    if n < 3:
        return 0
    k = max(1, -(-n // 10))
    rest = values[k:]
    threshold = SLOW_START_FRACTION * statistics.median(rest)
    j = 0
    while j < len(rest) - 1 and rest[j] < threshold:
        j += 1
    return k + j


def summarize(
    pattern: SpeedPattern, samples: list[SpeedSample], candidates: tuple[tuple[str, str, int], ...] = ()
) -> SpeedSummary:
    """Statistics of one pattern's samples (at least one) over the run without warm-up.
    A run average (HF Trainer's final train_samples_per_second) already spans the whole
    run: nothing is dropped from it. Of means since the start only the last counts (it
    includes its warm-up, as a run average does)."""
    values = [s.value for s in samples]
    if pattern.running_mean:  # each is the mean since the start: the last one is the run's
        dropped, kept = 0, values[-1:]
    else:
        dropped = 0 if pattern.kind == "run_average" else warmup_count(values)
        kept = values[dropped:]
    median = statistics.median(kept)
    if len(kept) >= 2:
        p25, _, p75 = statistics.quantiles(kept, n=4, method="inclusive")
    else:
        p25 = p75 = kept[0]
    mad = statistics.median(abs(v - median) for v in kept)
    return SpeedSummary(
        metric=pattern.metric,
        unit=pattern.canonical_unit + (RUNNING_MEAN_UNIT if pattern.running_mean else ""),
        pattern_id=pattern.id,
        framework=pattern.framework,
        per_gpu=pattern.per_gpu,
        kind=pattern.kind,
        median=median,
        p25=p25,
        p75=p75,
        iqr=p75 - p25,
        mad=mad,
        samples_seen=len(samples),
        samples_used=len(kept),
        warmup_dropped=dropped,
        samples=tuple(samples),
        candidates=candidates,
    )


def extract_speed_bytes(
    data: bytes, patterns: tuple[SpeedPattern, ...] | None = None, *, tail_from_line: int | None = None
) -> SpeedSummary | None:
    """`extract_speed` for undecoded bytes: only the lines holding a prefilter literal are
    decoded (UTF-8, errors replaced)."""
    patterns = default_patterns() if patterns is None else tuple(patterns)
    if b"#015" in data:  # syslog and CloudWatch write carriage returns as #015
        data = data.replace(b"#015", b"\r")
    # One scan: the frameworks' own patterns and the bars are run on the lines they may read;
    # the lines a generic key may read are kept, and read only when the others read nothing.
    plan, generic = _plan(patterns), _generic(patterns)
    steps: dict[int, list[SpeedSample]] = {}
    bars: dict[int, list[tuple[str, int, SpeedSample]]] = {}
    deferred: list[tuple[int | None, str, list[int]]] = []
    for number, raw_line in lines_holding(data, plan.trigger):
        line = raw_line.decode("utf-8", "replace")
        low = line.lower()
        line_number = None if tail_from_line is not None and number >= tail_from_line else number
        to_try = sorted({i for lit, ids in plan.owners if lit in low for i in ids})
        if generic.intersection(to_try):
            deferred.append((line_number, line, [i for i in to_try if i in generic]))
        _read_line(patterns, [i for i in to_try if i not in generic], line_number, line, steps, bars)
    found = _kept(patterns, steps, bars)
    if not found and deferred:
        steps, bars = {}, {}
        for line_number, line, ids in deferred:
            _read_line(patterns, ids, line_number, line, steps, bars)
        found = _kept(patterns, steps, bars)
    if not found:
        return None
    ranked = sorted(found, key=lambda i: (-patterns[i].priority, i))
    candidates = tuple((patterns[i].id, patterns[i].metric, len(found[i])) for i in ranked)
    win = ranked[0]
    return summarize(patterns[win], found[win], candidates)


@lru_cache(maxsize=8)
def _generic(patterns: tuple[SpeedPattern, ...]) -> frozenset[int]:
    """The indices of the generic keys (speed/keys.py) among `patterns`."""
    return frozenset(i for i, p in enumerate(patterns) if p.fallback)


def _read_line(
    patterns: tuple[SpeedPattern, ...],
    ids: list[int],
    line_number: int | None,
    line: str,
    steps: dict[int, list[SpeedSample]],
    bars: dict[int, list[tuple[str, int, SpeedSample]]],
) -> None:
    for i in ids:
        pattern = patterns[i]
        for _, family, elapsed, raw, unit, value in line_hits(pattern, line):
            sample = SpeedSample(line_number, value, raw, unit)
            if pattern.kind == "bar":
                bars.setdefault(i, []).append((family, elapsed, sample))
            else:
                steps.setdefault(i, []).append(sample)


def _kept(
    patterns: tuple[SpeedPattern, ...],
    steps: dict[int, list[SpeedSample]],
    bars: dict[int, list[tuple[str, int, SpeedSample]]],
) -> dict[int, list[SpeedSample]]:
    """Each pattern's samples (a bar pattern's: of its main family), of the patterns that read
    at least their min_samples."""
    for i, hits in bars.items():
        family = _main_bar_family(hits)
        steps[i] = [sample for f, _, sample in hits if f == family]
    return {
        i: samples
        for i, samples in steps.items()
        if len(samples) >= patterns[i].min_samples
        and not (patterns[i].fallback and patterns[i].metric == "iterations_per_s" and _is_clock(samples))
    }


def _is_clock(samples: list[SpeedSample]) -> bool:
    """A generic key's time that rises at 9 of 10 lines at least, each time by about the same
    amount (the rises' median deviation under a quarter of their median) and by 1% of its
    median at least: the time since the start (modded-nanogpt's `train_time`, 372, 514, 657 ms),
    not a step's. A step time that slows down rises unevenly (YOLOX's 2.6, 3.9, 4.3, 4.7, 5.6 s).
    A clock rises at each line by the time between two lines: by 1% of its median at least in
    a log of up to about 200 such lines from its start; a mean since the start creeps up by
    less (modded-nanogpt's `step_avg`, 258.6, 260.7, 263.3 ms)."""
    if len(samples) < 4:
        return False
    times = [1 / s.value for s in samples]  # the canonical value of a time key is its reciprocal
    rises = [b - a for a, b in itertools.pairwise(times) if b > a]
    if len(rises) < 0.9 * (len(times) - 1):
        return False
    typical = statistics.median(rises)
    even = statistics.median(abs(r - typical) for r in rises) <= 0.25 * typical
    return even and typical >= 0.01 * statistics.median(times)


def extract_speed(
    text: str, patterns: tuple[SpeedPattern, ...] | None = None, *, tail_from_line: int | None = None
) -> SpeedSummary | None:
    """The training speed a log's text prints, or None when it prints none.

    `tail_from_line`: when `text` is a head and a tail joined at a cut, the first line of
    the tail; samples from there on get no line number.
    """
    return extract_speed_bytes(text.encode("utf-8", "surrogatepass"), patterns, tail_from_line=tail_from_line)


def read_speed(path: Path | str, patterns: tuple[SpeedPattern, ...] | None = None) -> SpeedSummary | None:
    """The training speed of one log file, reading at most its first HEAD_BYTES (1 MiB) and
    last TAIL_BYTES (4 MiB), as the failure classifier does; samples in the tail of a cut
    file have no line number."""
    first, last, size = read_parts(Path(path), HEAD_BYTES, TAIL_BYTES)
    if last is None:
        summary = extract_speed_bytes(first, patterns)
        return None if summary is None else _with(summary, truncated=False, bytes_read=size)
    summary = extract_speed_bytes(first + b"\n" + last, patterns, tail_from_line=first.count(b"\n") + 2)
    return None if summary is None else _with(summary, truncated=True, bytes_read=len(first) + len(last))


def _with(summary: SpeedSummary, *, truncated: bool, bytes_read: int) -> SpeedSummary:
    return dataclasses.replace(summary, truncated=truncated, bytes_read=bytes_read)
