"""Speed read from the structure loggers share (issue #28, part 1): a `[[key]]` table of
patterns.toml names the keys (or the units) that mean a time per iteration or a throughput,
and this module writes the pattern that reads them, whatever framework printed the line:

* form `key_value`: `key: 0.44`, `key=0.44`, `key 0.44`, JSON's `"key": 0.44`, a table's
  `| key | 0.44 |` (Stable-Baselines3's logger), a key in its namespace
  (`throughput/samples_per_sec: 412`) (a key, a separator or blanks, the number, an optional
  unit of the table's `units`): mmcv's `time: 0.595`, YOLOX's
  `iter_time: 1.270s`, MaxText's `seconds: 0.811`, nanoGPT's `time 1099.34ms`;
* form `value_unit`: the number, then the unit naming what it counts (`355.1 samples/s`,
  `3438 src tok/s`: one qualifying word may stand between).

A key is a whole word: `data_time`, `avg_reader_cost` or `eta` are never read as `time` (no
word character, `.`, `/` or `-` may stand before it), nor a key after one of the words of
`NOT_AFTER` (`total time`, `eval time`: a whole run's or another phase's), nor a value that
is a percentage, a clock (`10:43:36`), a date, a duration in words (`1 minute`), or followed
by a unit the table does not know (`0.5 it/s` after a samples key) or a bracketed word
(`16.7 (graph/s)`; after a printed unit a bracketed word is a note: `548.72 ms (step)`).
Of a line's keys of one table only the first is read (reading.py); where a line holds the keys
of several tables, the table of higher priority is the job's speed (ESPnet's `iter_time`, its
data loader's wait, loses to its `train_time`). A running mean in
brackets after the value (`time 0.6408 (0.6516)`) leaves the value read. Readings need
`min_samples` lines (default 3) before they can be a log's speed: one `time: 5` is no rate.
They are read only where no framework's own pattern (nor a progress bar) reads anything: a
log those know is read as before, and costs no second pass.

The generated pattern is validated as any [[pattern]] (patterns.py): its examples and
counter-examples are real lines, checked at load.
"""

from __future__ import annotations

import re

from gpucluster_analysis.errors import RulesError
from gpucluster_analysis.rule_tables import checked_keys

KEY_KEYS = {"id", "metric", "per_gpu", "priority", "form", "names", "units", "example"}
KEY_OPTIONAL = {"description", "counter_example", "min_samples", "framework"}
FORMS = ("key_value", "value_unit")
DEFAULT_MIN_SAMPLES = 3

# Words that make the key after them another phase's or the whole run's, not a step's.
NOT_AFTER = (
    "total",
    "elapsed",
    "eval",
    "evaluation",
    "valid",
    "validation",
    "test",
    "wall",
    "run",
    "epoch",
    "data",
    "training",
    "val",
    # a part of a step, not the whole (OpenPCDet's `Forward time: 0.31`)
    "forward",
    "backward",
    "fwd",
    "bwd",
    "optim",
    "optimizer",
    "loader",
    "dataloader",
    "reader",
    "wait",
    "io",
)

# A line of a test or validation pass (`Test: [0/782]  Time 3.4`, mmengine's `Epoch(val)`):
# its times and rates are not the training's.
TEST_PHASE = r"(?i)\b(?:test|eval|evaluation|validation|val)(?:[ \t]*+:[ \t]*+\[|\))"

# A number as loggers print it: 0.44, 1e-3, 5,615 (thousands separators), possessive: linear.
_NUMBER = r"(?P<value>\d{1,3}(?:,\d{3})++(?![\d])(?:\.\d++)?|\d++(?:\.\d++)?(?:[eE][-+]?\d++)?)"
# What may not follow a value (or its unit): a letter or digit, %, /, a clock's or date's next
# part; nor, after a blank, a percentage, another unit (`0.5 it/s`) or a bracketed word
# (`(graph/s)`). The next field (`\taccuracy=`) and a bracketed number (a running mean) may.
# A duration in words (`time=1 minute and 42.6 seconds`) is a whole phase's, never a step's.
_NOT_STEP_WORD = r"[ \t]?+(?:%|[A-Za-z]++/|(?:minutes?|mins?|hours?|hrs?|days?)\b)"
_AFTER = rf"(?![\w%/:]|\.\d|{_NOT_STEP_WORD}|[ \t]?+\([A-Za-z])"
# After a printed unit a bracketed word is the line's own note (LitGPT's `548.72 ms (step)`).
_AFTER_UNIT = rf"(?![\w%/:]|\.\d|{_NOT_STEP_WORD})"


def _alternation(words: list[str]) -> str:
    """Longest first (so `tokens/s/device` is tried before `tokens/s`); blanks match blanks."""
    return "|".join(re.escape(w).replace(r"\ ", "[ \\t]+") for w in sorted(words, key=lambda w: (-len(w), w)))


def pattern_table(table: object, n: int, source: str) -> dict[str, object]:
    """The [[pattern]] table a [[key]] table stands for (validated by patterns.py as any other)."""
    table, where = checked_keys(table, n, source, "key", KEY_KEYS, KEY_OPTIONAL)
    if table["form"] not in FORMS:
        raise RulesError(f"{where}: form must be one of {', '.join(FORMS)}")
    names, units = table["names"], table["units"]
    if not isinstance(names, list) or not names or not all(isinstance(x, str) and x.strip() for x in names):
        raise RulesError(f"{where}: names must be a non-empty list of non-empty strings")
    if not isinstance(units, dict) or not units or not all(isinstance(v, str) for v in units.values()):
        raise RulesError(f"{where}: units must be a table of printed unit -> conversion ('' for none printed)")
    printed = [u for u in units if u]
    unit_group = f"(?P<unit>{_alternation(printed)})" if printed else "(?P<unit>(?!))"
    if table["form"] == "key_value":
        # a key after one of NOT_AFTER is matched whole, with that word, and read as nothing
        # (reading.py skips a match whose `skip` group took part): one lookbehind per position
        # a metric's namespace (`throughput/`, `train/`: W&B and TensorBoard names) may stand
        # before the key; `eval/`, `data/` are another phase's or the loader's: read as nothing
        # (the namespace gives back its last part where that is the key: `global_step/sec`)
        before = f"(?:(?P<skip>{_alternation(list(NOT_AFTER))})[ _/]|(?:[A-Za-z]\\w{{0,30}}+/){{1,3}})?"
        regex = (
            f'(?i)(?<![\\w./-])"?+{before}(?:{_alternation(names)})"?+[ \\t]*+(?:[:=|][ \\t]*+)?'
            # a unit printed is taken (possessive): `548.72 ms` is never 548.72 without its unit
            f"{_NUMBER}(?P<si>[kKM](?![A-Za-z]))?+(?:[ \\t]?+{unit_group})?+(?(unit){_AFTER_UNIT}|{_AFTER})"
        )
    else:
        # `5092/261 tok/s` (OpenNMT's source/target tokens): the first number is read
        regex = f"(?i)(?<![\\w.,/]){_NUMBER}(?:/\\d++(?:\\.\\d++)?)?+[ \\t]?+(?:[A-Za-z]++[ \\t])?{unit_group}{_AFTER}"
        if "" in units:
            raise RulesError(f"{where}: a value_unit key is read by its unit: '' (none printed) cannot be one")
    out = {
        "unless": TEST_PHASE,
        "id": table["id"],
        "framework": table.get("framework", "any"),
        "metric": table["metric"],
        "unit": printed[0] if printed else names[0],  # as printed: the unit, else the key
        "per_gpu": table["per_gpu"],
        "kind": "step",
        "priority": table["priority"],
        "regex": regex,
        "prefilter": sorted({w.lower() for w in (names if table["form"] == "key_value" else printed)}),
        "convert_by_unit": dict(units),
        "example": table["example"],
        "min_samples": table.get("min_samples", DEFAULT_MIN_SAMPLES),
        "fallback": True,
    }
    for optional in ("description", "counter_example"):
        if optional in table:
            out[optional] = table[optional]
    return out
