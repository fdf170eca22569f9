"""How one speed pattern reads one log line: the samples it finds, each with its position, its
progress bar's family and elapsed time, the value as printed and in the canonical metric.
The extractor (extract.py) and the check of the patterns' examples (patterns.py) both read
lines this way.
"""

from __future__ import annotations

import re
from functools import lru_cache

from gpucluster_analysis.logline import normalize_line
from gpucluster_analysis.speed.pattern import SI_MULTIPLIERS, SpeedPattern
from gpucluster_analysis.textmatch import PIECE_CHARS


def seconds(clock: str) -> int:
    """tqdm / rich elapsed time ("05:59", "1:02:03") in seconds."""
    total = 0
    for part in clock.split(":"):
        total = total * 60 + int(part)
    return total


@lru_cache(maxsize=4096)
def bar_family(desc: str, total: str) -> str:
    """A bar's family: its description without rank/host/time prefixes and with digits
    masked ("Epoch 3:" -> "Epoch #:") and blanks collapsed (YOLOv5's columns shift with the width of
    their numbers), and its total."""
    return re.sub(r"\s+", " ", re.sub(r"\d+", "#", normalize_line(desc))).strip() + "/" + total


Hit = tuple[int, str, int, float, str, float]  # position, family, elapsed s, raw, printed unit, canonical value


def line_hits(pattern: SpeedPattern, line: str) -> list[Hit]:
    """The samples `pattern` reads from one physical line (\\r pieces included), in order; each
    piece is read up to its PIECE_CHARS-th character (textmatch.py). A step pattern reads every
    piece. A bar pattern keeps only the last state of each bar family on the line: its pieces are
    read from the end, and a piece that starts with the description and holds the "/total " of a
    bar already read later on the line is skipped unmatched."""
    has_unit = "unit" in pattern.regex.groupindex
    has_si = "si" in pattern.regex.groupindex
    skips = "skip" in pattern.regex.groupindex  # speed/keys.py's generic keys
    unless = pattern.unless
    if pattern.kind != "bar":
        hits: list[Hit] = []
        start = 0
        for whole in line.split("\r"):
            piece = whole[:PIECE_CHARS]
            if unless is None or unless.search(piece) is None:
                for m in pattern.regex.finditer(piece):
                    if skips and m.group("skip") is not None:  # a key of another phase or the whole run
                        continue
                    if skips and any(h[0] >= start for h in hits):  # a generic key: the piece's first only
                        break
                    raw = float(m.group("value").replace(",", ""))
                    if has_si and m.group("si"):
                        raw *= SI_MULTIPLIERS[m.group("si")]
                    unit = m.group("unit") if has_unit else None
                    value = pattern.to_canonical(raw, unit)
                    if value is not None:
                        hits.append((start + m.start(), "", 0, raw, unit or pattern.unit, value))
            start += len(whole) + 1
        return hits
    last: dict[str, Hit] = {}
    seen: set[tuple[str, str]] = set()
    match = pattern.regex.match
    pos = len(line)
    for piece in reversed(line.split("\r")):
        pos -= len(piece) + 1
        # an earlier state of a bar already read: same description, same "/total "
        if any(piece.startswith(desc) and f"/{total} " in piece for desc, total in seen):
            continue
        piece = piece[:PIECE_CHARS]
        bar = match(piece)
        if bar is None or (unless is not None and unless.search(piece) is not None):
            continue
        key = (bar.group("desc"), bar.group("total"))
        if key in seen:
            continue
        seen.add(key)
        raw = float(bar.group("value"))
        unit = bar.group("unit") if has_unit else None
        value = pattern.to_canonical(raw, unit)
        family = bar_family(*key)
        if value is None or family in last:
            continue
        last[family] = (pos + 1, family, seconds(bar.group("elapsed")), raw, unit or pattern.unit, value)
    return sorted(last.values())


def line_values(pattern: SpeedPattern, line: str) -> list[float]:
    """The canonical values `pattern` reads from one log line, as the extractor would
    (used to check the examples of patterns.toml)."""
    return [hit[5] for hit in line_hits(pattern, line.replace("#015", "\r"))]
