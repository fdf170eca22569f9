"""Score gca's log readers on the real logs collected for issue #28 (tests/data/*/wild*/), the
development set and the held-out third (`heldout_*`) apart. Run before any tuning and after:

    python benchmarks/score_wild_logs.py

* failures (tests/data/classify/wild_failures): the reason `gca classify` gives against
  `<case>.expected`, labelled by hand;
* healthy runs (tests/data/classify/wild_benign): a run that did not fail must get `none`; any
  other reason is a false failure cause;
* speed (tests/data/speed/wild): read right when gca's speed is within 5% of the log's own,
  worked out from `<case>.toml`: a quantity whose meaning is a time per iteration, iterations,
  samples or tokens per second or TFLOP/s per GPU (never `other`), in gca's canonical direction
  (1/s per iteration), its median over the values after the first (the warm-up) when there are
  three or more, or its last value where the log prints a mean since the start (`running_mean`);
  gca's metric must be of the same kind (an iteration time is iterations_per_s), per GPU or for
  the whole job as the log's. A progress bar's
  rate annotated in both of tqdm's forms (s/it and it/s) is one quantity, its values in the order annotated.
"""

from __future__ import annotations

import statistics
import sys
import tomllib
from collections import Counter
from pathlib import Path

from gpucluster_analysis.classify import classify_file, load_signatures
from gpucluster_analysis.speed import read_speed

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"

# a quantity's meaning -> (gca's canonical metric, whether per GPU, how a printed value becomes it)
MEANINGS = {
    "seconds_per_iteration": ("iterations_per_s", False, lambda v: 1 / v),
    "ms_per_iteration": ("iterations_per_s", False, lambda v: 1000 / v),
    "iterations_per_second": ("iterations_per_s", False, lambda v: v),
    "samples_per_second": ("samples_per_s", False, lambda v: v),
    "samples_per_second_per_gpu": ("samples_per_s", True, lambda v: v),
    "tokens_per_second": ("tokens_per_s", False, lambda v: v),
    "tokens_per_second_per_gpu": ("tokens_per_s", True, lambda v: v),
    "tflops_per_gpu": ("tflops_per_gpu", True, lambda v: v),
}


SHOW_CASES = "--cases" in sys.argv


def _show(part: str, line: str) -> None:
    """With --cases, name the development set's misses; never the held-out's, which stay unseen."""
    if SHOW_CASES and part == "development":
        print(f"      {line}")


def _split(paths: list[Path]) -> dict[str, list[Path]]:
    return {
        "development": [p for p in paths if not p.name.startswith("heldout_")],
        "held-out": [p for p in paths if p.name.startswith("heldout_")],
    }


def score_failures() -> None:
    folder = DATA / "classify" / "wild_failures"
    signatures = load_signatures()
    for name, logs in _split(sorted(folder.glob("*.log"))).items():
        wrong: Counter[str] = Counter()
        right = 0
        for log in logs:
            want = log.with_suffix(".expected").read_text().strip()
            got = classify_file(log, signatures).reason
            right += got == want
            if got != want:
                wrong[f"{want} -> {got}"] += 1
                _show(name, f"{log.stem}: {want} -> {got}")
        print(f"failures, {name}: {right}/{len(logs)} right ({100 * right / max(len(logs), 1):.0f}%)")
        for what, n in wrong.most_common():
            print(f"    {n} x {what}")


def score_benign() -> None:
    folder = DATA / "classify" / "wild_benign"
    signatures = load_signatures()
    for name, logs in _split(sorted(folder.glob("*.log"))).items():
        given: Counter[str] = Counter()
        for log in logs:
            reason = classify_file(log, signatures).reason
            given[reason] += 1
            if reason != "none":
                _show(name, f"{log.stem}: {reason}")
        false = sum(n for reason, n in given.items() if reason != "none")
        print(
            f"healthy runs, {name}: {false}/{len(logs)} given a failure reason "
            f"({100 * false / max(len(logs), 1):.0f}%): {dict(given)}"
        )


# tqdm prints one bar's rate as s/it below 1 it/s and as it/s above: one quantity in two forms
BAR_FORMS = {"s/it", "it/s"}


def _one_bar(quantities: list[dict]) -> list[dict]:
    """A bar's s/it and it/s quantities (annotated apart) as the one quantity they are, in it/s."""
    forms = [q for q in quantities if q["key"] in BAR_FORMS and q["meaning"] != "other" and not q.get("running_mean")]
    if len(forms) < 2:
        return quantities
    values = [1 / v if q["key"] == "s/it" else v for q in forms for v in q["values"] if v]
    merged = {"key": "it/s", "meaning": "iterations_per_second", "values": values}
    return [merged] + [q for q in quantities if not any(q is f for f in forms)]


def _expected(case: dict) -> dict[tuple[str, bool], float]:
    """(metric, per GPU) -> the log's own speed of that kind."""
    out: dict[tuple[str, bool], float] = {}
    for q in _one_bar(case.get("quantity", [])):
        if q["meaning"] not in MEANINGS or not q["values"]:
            continue
        metric, per_gpu, convert = MEANINGS[q["meaning"]]
        values = [convert(v) for v in q["values"] if v]
        if q.get("running_mean"):  # a mean since the start: the last is the run's
            out.setdefault((metric, per_gpu), values[-1])
            continue
        kept = values[1:] if len(values) >= 3 else values
        out.setdefault((metric, per_gpu), statistics.median(kept))
    return out


def score_speed() -> None:
    folder = DATA / "speed" / "wild"
    for name, logs in _split(sorted(folder.glob("*.log"))).items():
        outcome: Counter[str] = Counter()
        for log in logs:
            want = _expected(tomllib.loads(log.with_suffix(".toml").read_text()))
            if not want:
                outcome["no speed gca could be held to (every quantity `other`)"] += 1
                continue
            got = read_speed(log)
            kind = None if got is None else (got.metric, got.per_gpu)
            if got is None:
                outcome["nothing read"] += 1
                _show(name, f"{log.stem}: nothing read, want {want}")
            elif kind not in want:
                outcome[f"another metric ({got.metric}{' per GPU' if got.per_gpu else ''})"] += 1
                _show(name, f"{log.stem}: {kind} {got.median:.4g}, want {want}")
            elif abs(got.median - want[kind]) <= 0.05 * abs(want[kind]):
                outcome["right"] += 1
            else:
                outcome["off by more than 5%"] += 1
                _show(name, f"{log.stem}: {kind} {got.median:.4g}, want {want}")
        held = sum(n for k, n in outcome.items() if not k.startswith("no speed"))
        print(f"speed, {name}: {outcome['right']}/{held} read within 5% ({100 * outcome['right'] / max(held, 1):.0f}%)")
        for what, n in outcome.most_common():
            print(f"    {n} x {what}")


if __name__ == "__main__":
    for part in [a for a in sys.argv[1:] if a != "--cases"] or ["failures", "benign", "speed"]:
        {"failures": score_failures, "benign": score_benign, "speed": score_speed}[part]()
