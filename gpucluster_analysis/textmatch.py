"""Matching patterns against text from the wild in time linear in its length.

Anyone who can submit a job writes its log, so one printed line must not be able to stall
an ingest. Python's `re` backtracks: `(\\w+=\\S+,? ?)+` takes exponential time on a line
built to fail it, and even `.*a.*b` cubic time. So:

* Every pattern that is data (failure signatures and evidence, training-speed patterns,
  shipped or a site's own) is compiled here, by RE2 (google-re2), whose automata run in
  time linear in the text whatever the pattern. RE2 has no lookaround, backreference,
  possessive quantifier or atomic group; a table's `unless` pattern says what a line must
  not hold instead of a negative lookahead.
* The code's own patterns (what is stripped from a log line, the parsers' field patterns)
  stay Python `re`, written so that none backtracks without bound: possessive quantifiers
  where repetitions meet, bounded repeats, and text cut to a known length where a
  pattern is tried at many starts. tests/test_hostile_lines.py feeds every one of them,
  and every data pattern, lines built to backtrack, and bounds the time of each.
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

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print its own message to stderr; ours is the one line the user sees
# A pattern whose automaton outgrows this is refused at load (RE2's default, 8 MiB, said again so that
# it is a decision): far beyond any real signature, and it bounds what a site's file can make gca build.
_OPTIONS.max_mem = 8 << 20


def compile_linear(pattern: str, where: str, what: str = "pattern") -> Any:
    """`pattern` compiled by RE2 (a `re`-like object: search, match, finditer, groupindex).

    A pattern RE2 cannot run is a RulesError naming `where` (file and table) and what to write
    instead."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as e:
        detail = e.args[0].decode("utf-8", "replace") if e.args and isinstance(e.args[0], bytes) else str(e)
        known = next(((construct, say) for key, construct, say in _UNSUPPORTED if key in detail), None)
        if known is None:
            raise RulesError(f"{where}: {what} does not compile: {detail}", "fix the pattern") from None
        construct, say = known
        raise RulesError(f"{where}: {what} uses {construct}, which gca's matcher (RE2) does not run",
                         f"{say}; RE2 never backtracks, so no log line can stall an ingest") from None
