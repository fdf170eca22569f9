"""Matching patterns against text from the wild in bounded time.

Anyone who can submit a job writes its log, so one printed line must not be able to stall
an ingest. Python's `re` backtracks: `(\\w+=\\S+,? ?)+` takes exponential time on a line
built to fail it, and even `.*a.*b` cubic time. So:

* Patterns a site can write (failure signatures and evidence, shipped or from its own
  `--signatures` file) are compiled here, by RE2 (google-re2), whose automata run in time
  linear in the text whatever the pattern. RE2 has no lookaround, backreference, possessive
  quantifier or atomic group; a table's `unless` pattern says what a line must not hold
  instead of a negative lookahead.
* gca's own patterns (the noise stripped from a log line, the training-speed patterns, the
  parsers' field patterns) stay Python `re`: RE2's capture groups cost several times more
  per progress-bar line, and these patterns are written so that none backtracks without
  bound (possessive quantifiers where repetitions meet, bounded lazy scans), and the speed
  patterns see each piece of a line up to PIECE_CHARS characters.
  tests/test_hostile_lines.py feeds every one of them, and every signature, lines built to
  backtrack, and bounds the time of each.
"""

from __future__ import annotations

from typing import Any

import re2

from gpucluster_analysis.errors import RulesError

# Constructs of Python's `re` that RE2 does not run, as RE2's message names them:
# (text of the message, the construct, what to write instead).
_UNSUPPORTED = (
    ("(?!", "a negative lookahead (?!...)", "put what the line must not hold in `unless`"),
    ("(?=", "a lookahead (?=...)", "match the text itself, or put an exclusion in `unless`"),
    ("(?<", "a lookbehind (?<=...) or (?<!...)", "match the preceding character itself, e.g. (?:^|[^A-Za-z])"),
    ("(?>", "an atomic group (?>...)", "write a plain group (?:...)"),
    ("operator: *+", "a possessive quantifier *+", "write a plain *"),
    ("operator: ++", "a possessive quantifier ++", "write a plain +"),
    ("operator: ?+", "a possessive quantifier ?+", "write a plain ?"),
    ("escape sequence: \\Z", "\\Z", "write $ or \\z"),
    ("escape sequence: \\", "a backreference or an escape RE2 does not know", "match the text itself"),
    ("repetition size", "a counted repetition over 1,000", "write + or *, or at most {1000}"),
)

# The most characters of one \r piece of a log line that a speed pattern sees: progress bars
# and step lines are well under a kilobyte, and a bound keeps a hostile piece's cost fixed.
PIECE_CHARS = 4096

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print its own message to stderr; ours is the one line the user sees
_OPTIONS.never_capture = True  # a signature says whether it occurs in a line, never where its groups are
# A pattern whose automaton outgrows this is refused at load (RE2's default, 8 MiB, said again so that
# it is a decision): far beyond any real signature, and it bounds what a site's file can make gca build.
_OPTIONS.max_mem = 8 << 20
_UNANCHORED = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)
_NO_MATCH = (-1, -1)


class LinearPattern:
    """A pattern compiled by RE2 that answers one question: does it occur in a line?

    google-re2's Python wrapper builds a match object and maps byte offsets back to characters
    on every call (3-11 us a line); this asks RE2's own matcher about the line's UTF-8 bytes,
    encoded once for all the patterns tried on it (~1 us)."""

    __slots__ = ("pattern", "_match")

    def __init__(self, pattern: str, compiled: Any) -> None:
        self.pattern = pattern
        self._match: Any = getattr(getattr(compiled, "_regexp", None), "Match", None)
        if self._match is None:  # another google-re2 than the one this was written for: its public way
            self._match = lambda _anchor, data, _pos, _end: ((0, 0),) if compiled.search(data) else (_NO_MATCH,)

    def occurs_in(self, data: bytes) -> bool:
        """Whether the pattern occurs in `data`, a line's UTF-8 bytes."""
        return self._match(_UNANCHORED, data, 0, len(data))[0] != _NO_MATCH

    def occurs_in_text(self, text: str) -> bool:
        return self.occurs_in(text.encode("utf-8", "surrogatepass"))


def compile_linear(pattern: str, where: str, what: str = "pattern") -> LinearPattern:
    """`pattern` compiled by RE2.

    A pattern RE2 cannot run is a RulesError naming `where` (file and table) and what to write
    instead."""
    try:
        return LinearPattern(pattern, re2.compile(pattern, _OPTIONS))
    except re2.error as e:
        detail = e.args[0].decode("utf-8", "replace") if e.args and isinstance(e.args[0], bytes) else str(e)
        known = next(((construct, say) for key, construct, say in _UNSUPPORTED if key in detail), None)
        if known is None:
            raise RulesError(f"{where}: {what} does not compile: {detail}", "fix the pattern") from None
        construct, say = known
        raise RulesError(
            f"{where}: {what} uses {construct}, which gca's matcher (RE2) does not run",
            f"{say}; RE2 never backtracks, so no log line can stall an ingest",
        ) from None
