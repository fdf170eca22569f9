"""Training speed from job logs: find the speed lines a job prints, summarize them.

Contract (pure functions: nothing here prints, exits or touches the store):

* `extract_speed(text) -> SpeedSummary | None` and `extract_speed_bytes(data, *,
  tail_from_line=None)` for a log already in memory; `read_speed(path)` for a file, read
  like the failure classifier reads it (whole up to 5 MiB, else its first 1 MiB and last
  4 MiB; samples in such a tail have no line number). None: the log prints no speed.
* The lines are recognized by the patterns of `patterns.toml` (data, with real example
  lines that the loader and tests/test_speed.py check). Every value is turned into one of
  four canonical metrics where higher is faster: s/it, s/step and "iter time (s)" become
  1/v per second, ms per iteration or step 1000/v, us/step 1,000,000/v. MFU is never read:
  it is a share of a peak the script assumed, no speed (issue #28).
* Generic keys (`[[key]]` tables, speed/keys.py): the keys and units real loggers share
  (`time: 0.44`, `iter_time: 1.27s`, `seconds: 0.811`, `ips: 355 samples/s`, JSON's
  `"throughput": 111.9`, `3438 tok/s`, `TFLOP/s/device: 210`), whatever framework printed
  them, never `data_time`, `eta`, a percentage or another phase's (`eval time`, `total
  time`). They are read only where no framework pattern nor bar reads anything, and need
  three lines.
* The winning metric. When a log prints several, the pattern with the highest priority
  that matched at least once wins, and the summary is over its samples only (two
  patterns of one metric are not mixed). Priorities come in bands by metric:
  tflops_per_gpu > tokens_per_s > samples_per_s > iterations_per_s.
  Achieved TFLOP/s per GPU compares jobs of different sizes and models on the hardware
  (what a study of slow GPUs needs); tokens and samples per second measure work
  in the model's own units; iterations per second need the batch size to mean anything,
  so a tqdm bar's it/s comes last. Inside a band a framework's per-step line beats a
  run average, which beats a generic progress bar.
* Progress bars (`kind = "bar"`). Of a bar redrawn with \\r only the last state on each
  physical line counts (tqdm's rate there is an exponential moving average, so it is the
  recent speed). Bars are grouped in families (description with digits masked, total);
  only the family the job spent the most time in (sum of elapsed-time increases) is kept:
  that is the training loop, not an eval, data-loading or download bar. Bars named
  validation, eval, test, loading, map, download... are never read, nor bars counting
  other units than it (MB/s, examples/s).
* Warm-up: with 3 or more samples, the first ceil(10%) of them (at least one) are
  dropped, then every sample before the first one reaching half the median of the rest.
  Nothing is dropped from a run average (HF Trainer's train_samples_per_second).
* Means since the start (`running_mean` patterns: detectron2's `time`, tf_cnn_benchmarks'
  `images/sec`): the last value is the run's speed, nothing is dropped, and the unit ends in
  ` (mean since start)`.
* Summary: median, quartiles p25/p75 and IQR (linear interpolation, statistics.quantiles
  "inclusive"), MAD (median absolute deviation, unscaled), samples seen/used/dropped,
  every sample (line number, canonical value, printed value and unit) in log order, and
  the other patterns that matched.

Speed: a literal prefilter (the classifier's trie) picks the lines worth decoding; see
benchmarks/speed_extract.py and benchmarks/RESULTS.md.
"""

from __future__ import annotations

from gpucluster_analysis.speed.extract import (
    SLOW_START_FRACTION,
    WARMUP_FRACTION,
    SpeedSample,
    SpeedSummary,
    default_patterns,
    extract_speed,
    extract_speed_bytes,
    read_speed,
    summarize,
    warmup_count,
)
from gpucluster_analysis.speed.pattern import METRICS, SpeedPattern
from gpucluster_analysis.speed.patterns import load_patterns

__all__ = [
    "METRICS",
    "SLOW_START_FRACTION",
    "WARMUP_FRACTION",
    "SpeedPattern",
    "SpeedSample",
    "SpeedSummary",
    "default_patterns",
    "extract_speed",
    "extract_speed_bytes",
    "load_patterns",
    "read_speed",
    "summarize",
    "warmup_count",
]
