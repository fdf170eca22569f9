"""Text from the input made safe to show: its control characters written as escapes.

File names, job, user, VC and machine names come from logs anyone can write. A name holding
an escape sequence would restyle or rewrite a terminal, a tab or newline would forge another
field or line of gca's output. `printable(text)` is what the printing and rendering layers
(cli/, the report's HTML and figures) apply to every such string; it is defined here once.
"""

from __future__ import annotations

import re

# C0 controls (tab, newline and CR among them); beyond them DEL and the C1 controls (0x9b is a
# CSI), the Unicode line and paragraph separators, and the bidirectional marks, overrides and
# isolates, which reorder what is shown ("Trojan Source").
_BEYOND_C0 = "\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
UNPRINTABLE = re.compile(f"[\x00-\x1f{_BEYOND_C0}]")
_RAW_IN_JSON = re.compile(f"[{_BEYOND_C0}]")  # JSON escapes C0 itself
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def printable(text: str) -> str:
    r"""`text` with each control character written as Python writes it in a string literal:
    `\t`, `\n`, `\r`, else `\xNN` (`\x1b` for ESC) or `\uNNNN`. Other text is unchanged.

    >>> printable("a\x1b[31mb\tc\n")
    'a\\x1b[31mb\\tc\\n'
    """
    return UNPRINTABLE.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _NAMED.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")


def printable_json(text: str) -> str:
    """JSON text (json.dumps with ensure_ascii=False) with the control characters JSON leaves
    raw written as \\uNNNN escapes too: the same JSON value, nothing unprintable."""
    return _RAW_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
