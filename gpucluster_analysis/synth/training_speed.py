"""The training speed synthetic jobs print in their logs, with a few machines made slower.

Contract (docs/synth.md, "Training speed"): pure functions of their arguments and the
numpy Generators they are given; nothing here does I/O.

* `draw_slow_machines(machines, rng)`: which machines run every job slower, and by what
  factor (`SLOW_FACTOR_RANGE`, two decimals); none on clusters of fewer than 3 machines.
* `draw_families(keys, rng)`: per job family (the key the report groups by: user, job name
  where the format has one, GPU count) the log format it prints (`FORMATS`), its base
  speed in iterations per second on a healthy machine, and its batch size.
* `plan_attempt(...)`: the speed values one attempt prints, as text, and what gca's speed
  extractor must make of them (metric, unit, median after the warm-up), computed from that
  text by the extractor's documented rules, never by running it. An attempt runs at its
  family's base speed times the slowest factor among the machines it ran on (a gang goes at
  the pace of its slowest GPU), times a small per-attempt noise; each sample adds its own
  noise, and the first sample is a slow warm-up.
* `render(speed, rng, glue_last)`: the log lines that print those values, in the
  attempt's format; the printed numbers are exactly `speed.printed`.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import numpy as np

# Log formats, each one that gca's speed patterns read (speed/patterns.toml), and the share of
# families that print it.
FORMATS = ("tqdm", "hf_trainer", "megatron", "deepspeed", "keras", "nanogpt")
FORMAT_WEIGHTS = (0.30, 0.20, 0.12, 0.13, 0.12, 0.13)
# A family's base speed in iterations per second, log-uniform in this range per format. Keras
# prints whole ms per step (kept under 1 s so it never rounds to whole seconds).
RATE_RANGE = {
    "tqdm": (0.4, 12.0),
    "hf_trainer": (0.5, 8.0),
    "megatron": (0.1, 2.0),
    "deepspeed": (0.3, 5.0),
    "keras": (2.0, 10.0),
    "nanogpt": (0.8, 10.0),
}
BATCH_SIZES = (8, 16, 32, 64, 128, 256)  # samples per step (DeepSpeed, HF Trainer)

SLOW_MACHINE_FRACTION = 0.1  # of the machines, at least one on clusters of 3 or more
SLOW_FACTOR_RANGE = (0.70, 0.85)
ATTEMPT_NOISE = 0.02  # standard deviation of log(speed) of an attempt around its family's base x factor
SAMPLE_NOISE = 0.015  # of each printed sample around its attempt's speed
WARMUP_RANGE = (0.25, 0.45)  # the first sample, relative to the steady speed (compilation, a cold cache)
MAX_SAMPLES = 6  # 3 samples, plus one an hour of the run, up to this

# Failure reasons that strike once training runs: their logs print the speed before the error.
# Import errors, missing checkpoint keys and launch failures stop before the first step.
TRAINED_REASONS = frozenset(
    {"cuda_oom", "host_oom", "file_not_found", "nan_loss", "nccl_error", "gpu_hw", "mpi_failure"}
)

_CANONICAL = {"iterations_per_s": "it/s", "samples_per_s": "samples/s"}


@dataclass(frozen=True)
class Family:
    format: str
    rate: float  # iterations per second on a healthy machine
    batch: int  # samples per iteration


@dataclass(frozen=True)
class AttemptSpeed:
    """What one attempt prints about its speed, and what a reader must make of it."""

    format: str
    factor: float  # the slowest factor among its machines (1.0: all healthy)
    base: float  # the family's speed on healthy machines, in `metric`
    printed: tuple[str, ...]  # each sample's number as printed (tqdm: with its unit, "2.13it/s"), warm-up first
    run_average: str | None  # HF Trainer's train_samples_per_second, printed when the run completed
    completed: bool  # the run ended normally (else it failed or was cancelled mid-epoch)
    metric: str
    unit: str
    median: float  # gca's median: over `printed` after the warm-up, or the run average

    def truth(self) -> dict[str, object]:
        return {
            "format": self.format,
            "factor": self.factor,
            "base": self.base,
            "metric": self.metric,
            "median": self.median,
            "unit": self.unit,
            "samples": len(self.printed),
        }


def draw_slow_machines(machines: int, rng: np.random.Generator) -> dict[int, float]:
    """Machine -> speed factor of the slow ones, by machine number."""
    if machines < 3:
        return {}
    count = max(1, round(SLOW_MACHINE_FRACTION * machines))
    chosen = np.sort(rng.choice(machines, size=count, replace=False))
    factors = rng.uniform(*SLOW_FACTOR_RANGE, size=count)
    return {int(m): round(float(f), 2) for m, f in zip(chosen, factors, strict=True)}


def draw_families(keys: set[tuple[int, ...]], rng: np.random.Generator) -> dict[tuple[int, ...], Family]:
    """A format, base speed and batch size per family key, drawn in sorted key order."""
    out = {}
    weights = np.array(FORMAT_WEIGHTS)
    for key in sorted(keys):
        fmt = FORMATS[int(rng.choice(len(FORMATS), p=weights / weights.sum()))]
        lo, hi = RATE_RANGE[fmt]
        rate = math.exp(float(rng.uniform(math.log(lo), math.log(hi))))
        out[key] = Family(fmt, rate, int(rng.choice(BATCH_SIZES)))
    return out


def slowest_factor(machines: list[int], slow: dict[int, float]) -> float:
    return min((slow.get(m, 1.0) for m in machines), default=1.0)


def _tqdm_rate(rate: float) -> str:
    """tqdm's rate: it/s, or s/it below one iteration a second."""
    return f"{rate:.2f}it/s" if rate >= 1.0 else f"{1.0 / rate:.2f}s/it"


def _canonical(fmt: str, text: str) -> float:
    """The value gca's pattern makes of a printed number (speed/patterns.py CONVERSIONS)."""
    if fmt in ("tqdm", "hf_trainer"):
        return float(text[:-4]) if text.endswith("it/s") else 1.0 / float(text[:-4])
    if fmt == "deepspeed":
        return float(text)
    if fmt == "keras":  # "454ms", or whole seconds from one second a step on ("2s")
        return 1000.0 / float(text[:-2]) if text.endswith("ms") else 1.0 / float(text[:-1])
    return 1000.0 / float(text)  # megatron, nanogpt: milliseconds per iteration


def steady_median(values: list[float]) -> float:
    """The median gca's extractor reports for step samples: with 3 or more, the first ceil(10%)
    dropped, then any before the first reaching half the median of the rest (speed/extract.py)."""
    n = len(values)
    k = 0
    if n >= 3:
        k = max(1, -(-n // 10))
        rest = values[k:]
        threshold = 0.5 * statistics.median(rest)
        j = 0
        while j < len(rest) - 1 and rest[j] < threshold:
            j += 1
        k += j
    return statistics.median(values[k:])


def plan_attempt(
    family: Family, factor: float, elapsed_s: int, completed: bool, rng: np.random.Generator
) -> AttemptSpeed:
    """The speed values one attempt of `family` prints when it ran `elapsed_s` seconds at `factor`."""
    n = min(MAX_SAMPLES, 3 + max(0, elapsed_s) // 3600)
    steady = family.rate * factor * math.exp(ATTEMPT_NOISE * float(rng.standard_normal()))
    rates = steady * np.exp(SAMPLE_NOISE * rng.standard_normal(n))
    rates[0] *= float(rng.uniform(*WARMUP_RANGE))
    fmt = family.format
    printed: list[str] = []
    for r in rates.tolist():
        if fmt in ("tqdm", "hf_trainer"):
            printed.append(_tqdm_rate(r))
        elif fmt == "deepspeed":
            printed.append(f"{r * family.batch:.4f}")
        elif fmt == "megatron":
            printed.append(f"{1000.0 / r:.1f}")
        elif fmt == "keras":  # as Keras prints time per step: whole ms, whole seconds from 1 s on
            printed.append(f"{round(1000.0 / r)}ms" if 1000.0 / r < 999.5 else f"{round(1.0 / r)}s")
        else:  # nanogpt
            printed.append(f"{1000.0 / r:.2f}")
    if fmt == "hf_trainer" and completed:
        # the Trainer's average over the whole run, warm-up included
        average = f"{steady * family.batch * float(rng.uniform(0.95, 0.99)):.3f}"
        return AttemptSpeed(
            fmt,
            factor,
            family.rate * family.batch,
            tuple(printed),
            average,
            completed,
            "samples_per_s",
            _CANONICAL["samples_per_s"],
            float(average),
        )
    metric = "samples_per_s" if fmt == "deepspeed" else "iterations_per_s"
    base = family.rate * family.batch if fmt == "deepspeed" else family.rate
    median = steady_median([_canonical(fmt, text) for text in printed])
    return AttemptSpeed(fmt, factor, base, tuple(printed), None, completed, metric, _CANONICAL[metric], median)


# --- the log lines ---------------------------------------------------------------------


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60:02d}:{s % 60:02d}"


def _bar(desc: str, done: int, total: int, elapsed: float, remaining: float, rate: str, post: str = "") -> str:
    pct = 100 * done // total
    return (
        f"{desc}{pct:3d}%|{'█' * (pct // 10):10s}| {done}/{total} [{_clock(elapsed)}<{_clock(remaining)}, {rate}{post}]"
    )


def _rate_of(text: str) -> float:
    return _canonical("tqdm", text)


def _tqdm_lines(speed: AttemptSpeed, rng: np.random.Generator) -> list[str]:
    """One bar per epoch, redrawn with \\r; a line ends with its epoch (tqdm's leave=True)."""
    total = int(rng.choice([500, 1000, 2502, 5005]))
    lines = []
    for e, text in enumerate(speed.printed):
        rate = _rate_of(text)
        # every epoch ends, but the one a failure or a cancellation interrupts
        done = total if speed.completed or e < len(speed.printed) - 1 else int(total * rng.uniform(0.2, 0.95))
        half = done // 2
        post = f", loss={float(rng.uniform(0.2, 4.0)):.3f}"
        states = [
            _bar(
                f"Epoch {e}: ",
                half,
                total,
                half / rate,
                (total - half) / rate,
                _tqdm_rate(rate * float(rng.uniform(0.9, 1.1))),
                post,
            ),
            _bar(f"Epoch {e}: ", done, total, done / rate, (total - done) / rate, text, post),
        ]
        lines.append("\r".join(states))
    return lines


def _hf_lines(speed: AttemptSpeed, rng: np.random.Generator, glue_last: bool) -> list[str]:
    """HF Trainer: one bar over the run, each logging step's dict glued to it; the run's metrics if it completed."""
    n = len(speed.printed)
    total = int(rng.choice([1000, 3000, 9375]))
    step = total // (n + 1 if speed.run_average is None else n)
    lines = ["***** Running training *****", f"  Total optimization steps = {total:,}"]
    elapsed = 0.0
    for k, text in enumerate(speed.printed, 1):
        rate = _rate_of(text)
        done = min(total, step * k)
        elapsed += step / rate
        line = _bar("", done, total, elapsed, (total - done) / rate, text)
        if not (glue_last and k == n):
            line += (
                f"{{'loss': {float(rng.uniform(0.3, 3.0)):.4f}, 'learning_rate': "
                f"{5e-05 * (1 - done / total):.4e}, 'epoch': {3 * done / total:.2f}}}"
            )
        lines.append(line)
    if speed.run_average is not None:
        lines.append(
            f"{{'train_runtime': {elapsed:.4f}, 'train_samples_per_second': {speed.run_average}, "
            f"'train_steps_per_second': {total / elapsed:.3f}, 'train_loss': "
            f"{float(rng.uniform(0.3, 2.0)):.4f}, 'epoch': 3.0}}"
        )
    return lines


def _megatron_lines(speed: AttemptSpeed, rng: np.random.Generator) -> list[str]:
    interval = int(rng.choice([10, 50, 100]))
    total = int(rng.choice([100_000, 250_000, 500_000]))
    batch = int(rng.choice([256, 512, 1024]))
    return [
        f" iteration {interval * k:8d}/{total:8d} | consumed samples: {interval * k * batch:12d} | elapsed time per"
        f" iteration (ms): {text} | learning rate: {float(rng.uniform(1e-5, 3e-4)):.3E} | global batch size: "
        f"{batch:5d} |"
        f" lm loss: {float(rng.uniform(2.0, 9.0)):.6E} | loss scale: 1.0 |"
        for k, text in enumerate(speed.printed, 1)
    ]


def _deepspeed_lines(speed: AttemptSpeed, rng: np.random.Generator) -> list[str]:
    interval = int(rng.choice([10, 50, 100]))
    lines = []
    values: list[float] = []
    for k, text in enumerate(speed.printed, 1):
        values.append(float(text))
        lines.append(
            f"[INFO] [timer.py:215:stop] epoch=0/micro_step={interval * k}/global_step={interval * k}, "
            f"RunningAvgSamplesPerSec={sum(values) / len(values):.4f}, CurrSamplesPerSec={text}, "
            f"MemAllocated={float(rng.uniform(2, 60)):.2f}GB"
        )
    return lines


def _keras_lines(speed: AttemptSpeed, rng: np.random.Generator) -> list[str]:
    steps = int(rng.choice([390, 469, 1563, 2500]))
    epochs = len(speed.printed) + int(rng.integers(0, 20))
    lines = []
    for e, text in enumerate(speed.printed, 1):
        lines.append(f"Epoch {e}/{epochs}")
        seconds = steps / _canonical("keras", text)
        lines.append(
            f"{steps}/{steps} [==============================] - {round(seconds)}s {text}/step"
            f" - loss: {float(rng.uniform(0.1, 2.5)):.4f} - accuracy: {float(rng.uniform(0.3, 0.95)):.4f}"
        )
    return lines


def _nanogpt_lines(speed: AttemptSpeed, rng: np.random.Generator) -> list[str]:
    interval = int(rng.choice([1, 10, 100]))
    return [
        f"iter {interval * k}: loss {float(rng.uniform(2.5, 4.5)):.4f}, time {text}ms"
        for k, text in enumerate(speed.printed)
    ]


def render(speed: AttemptSpeed, rng: np.random.Generator, glue_last: bool = False) -> str:
    """The training output that prints `speed`, newline-terminated; with `glue_last`, a
    progress bar's last state has no newline, so whatever the log prints next glues to it."""
    fmt = speed.format
    if fmt == "tqdm":
        lines = _tqdm_lines(speed, rng)
    elif fmt == "hf_trainer":
        lines = _hf_lines(speed, rng, glue_last)
    elif fmt == "megatron":
        lines = _megatron_lines(speed, rng)
    elif fmt == "deepspeed":
        lines = _deepspeed_lines(speed, rng)
    elif fmt == "keras":
        lines = _keras_lines(speed, rng)
    else:
        lines = _nanogpt_lines(speed, rng)
    text = "\n".join(lines)
    bar_last = fmt == "tqdm" or (fmt == "hf_trainer" and speed.run_average is None)
    return text if glue_last and bar_last else text + "\n"
