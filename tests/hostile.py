"""Lines built to make a regular expression backtrack, from the pattern's own parts.

A backtracking matcher is slow on a line that almost matches: a run of what one repetition
takes, which a neighbouring repetition could take too, then a character that makes the
whole attempt fail (`(a=aa=aa=...` for `\\((?:\\w+=[^\\s,()]+,? ?)+\\)`, `xid` + digits for
`[a-z][\\w-]*\\d+...: `, spaces for `\\s+[━\\- ]*\\d`). So, from Python's own parse of a
pattern (re._parser), this module takes:

* for every repetition, the text that leads to it (the characters of what comes before it)
  and one pass through its body, and pumps the body: lead + body * n + a failing tail, and
  also the two together, (lead + body) * n, where a search starts again at every lead;
* every character the pattern's literals and classes accept (and, for a negated class, a
  few it refuses), pumped alone and in pairs, with and without each literal run before.

`hostile_pumps` gives the shapes, `Pump.at` a line of any length. A pattern linear in the line
takes four times as long on a line four times as long; a quadratic one sixteen times, and a
cubic or exponential one soon never ends.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from re import _constants as c
from re import _parser as sre_parse

# Characters tried against negated classes and categories.
POOL = "a1 \t-_=,:;.|/\\()[]{}<>\"'%#@!?*+^$~&Z\u00e9\u2022\u2501"
TAILS = ("", "\x00", "!")
_CATEGORY_SAMPLES = {
    c.CATEGORY_DIGIT: "19",
    c.CATEGORY_NOT_DIGIT: "a-",
    c.CATEGORY_SPACE: " \t",
    c.CATEGORY_NOT_SPACE: "a=",
    c.CATEGORY_WORD: "a1_",
    c.CATEGORY_NOT_WORD: " -=",
}


def _in_class(ch: str, items: list) -> bool:
    """Whether `ch` is in a parsed character class (its NEGATE already removed)."""
    code = ord(ch)
    for op, av in items:
        if op is c.LITERAL and av == code:
            return True
        if op is c.RANGE and av[0] <= code <= av[1]:
            return True
        if op is c.CATEGORY:
            sample = {
                c.CATEGORY_DIGIT: ch.isdigit(),
                c.CATEGORY_NOT_DIGIT: not ch.isdigit(),
                c.CATEGORY_SPACE: ch.isspace(),
                c.CATEGORY_NOT_SPACE: not ch.isspace(),
                c.CATEGORY_WORD: ch.isalnum() or ch == "_",
                c.CATEGORY_NOT_WORD: not (ch.isalnum() or ch == "_"),
            }
            if sample.get(av, False):
                return True
    return False


def _class_chars(items: list) -> list[str]:
    """A few characters a parsed character class accepts."""
    if items and items[0][0] is c.NEGATE:
        return [ch for ch in POOL if not _in_class(ch, items[1:])][:6]
    out: list[str] = []
    for op, av in items:
        if op is c.LITERAL:
            out.append(chr(av))
        elif op is c.RANGE:
            out += [chr(av[0]), chr(av[1])]
        elif op is c.CATEGORY:
            out += list(_CATEGORY_SAMPLES.get(av, ""))
    return out


class _Walk:
    """One pass through a parse: `pick` says which of a class's characters stands for it, and
    `skip_optional` whether a repetition that may be absent is left out of the pass."""

    def __init__(self, pick: int = 0, skip_optional: bool = False) -> None:
        self.pick = pick
        self.skip_optional = skip_optional
        self.chars: list[str] = []  # in pattern order, repeated where the pattern repeats them
        self.literals: list[str] = []  # runs of literal characters
        self.pumps: list[tuple[str, str]] = []  # (lead, body) of each repetition

    def text(self, nodes: sre_parse.SubPattern | list, lead: str) -> str:
        """One representative pass through `nodes` (walking them on the way), after `lead`."""
        out = ""
        run = ""
        for op, av in nodes:
            if op is c.LITERAL:
                run += chr(av)
                self.chars.append(chr(av))
                out += chr(av)
                continue
            if len(run) > 1:
                self.literals.append(run)
            run = ""
            if op is c.NOT_LITERAL:
                chars = [x for x in POOL if ord(x) != av]
                self.chars += chars[:2]
                out += chars[self.pick % len(chars)]
            elif op is c.IN:
                chars = _class_chars(av)
                self.chars += chars
                out += chars[self.pick % len(chars)] if chars else ""
            elif op is c.ANY:
                self.chars.append("a")
                out += "a"
            elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
                low, high, body = av
                once = self.text(body, lead + out)
                if high is c.MAXREPEAT or high > 1:
                    self.pumps.append((lead + out, once))
                out += once * (low if self.skip_optional else max(low, 1))
            elif op is c.SUBPATTERN:
                out += self.text(av[-1], lead + out)
            elif op is c.ATOMIC_GROUP:
                out += self.text(av, lead + out)
            elif op is c.BRANCH:
                texts = [self.text(alt, lead + out) for alt in av[1]]
                out += texts[0]
            elif op in (c.ASSERT, c.ASSERT_NOT):
                self.text(av[1], lead + out)
            elif op is c.GROUPREF_EXISTS:
                out += self.text(av[1], lead + out)
                if av[2] is not None:
                    self.text(av[2], lead + out)
        if len(run) > 1:
            self.literals.append(run)
        return out


@dataclass(frozen=True, order=True)
class Pump:
    """A hostile line's shape: `lead`, then `body` repeated, then `tail`."""

    lead: str
    body: str
    tail: str

    def at(self, length: int) -> str:
        """The line, about `length` characters long."""
        return self.lead + self.body * max(1, (length - len(self.lead)) // len(self.body)) + self.tail


def hostile_pumps(
    pattern: str | re.Pattern[str], pairs: int = 40, seed: int = 0, limit: int | None = None
) -> list[Pump]:
    """The shapes of the lines that make a backtracking matcher of `pattern` work hardest: every
    repetition's pumps, then (up to `limit` in all, a seeded sample) the pumped characters and pairs."""
    text = pattern.pattern if isinstance(pattern, re.Pattern) else pattern
    flags = pattern.flags if isinstance(pattern, re.Pattern) else 0
    if isinstance(text, bytes):
        text = text.decode("latin-1")
    parsed = sre_parse.parse(text, flags & ~re.UNICODE)
    walks = [_Walk(pick, skip) for pick in range(3) for skip in (False, True)]
    for w in walks:
        w.text(parsed, "")
    walk = walks[0]
    lines: set[Pump] = set()

    def pump(lead: str, body: str) -> None:
        if body:
            lines.update(Pump(lead[-200:], body, tail) for tail in TAILS)

    for w in walks:
        for lead, body in w.pumps:
            pump(lead, body)
            pump("", body)
            pump("", lead[-24:] + body)  # the way in again and again: a scan from each start to the end
    repetitions = sorted(lines)
    lines = set()
    chars = list(dict.fromkeys(walk.chars))
    leads = [""] + walk.literals[:8] + chars[:8]
    for ch in chars:
        for lead in leads:
            pump(lead, ch)
    # neighbours in the pattern, then a sample of the other pairs
    neighbours = {(a, b) for a, b in zip(walk.chars, walk.chars[1:], strict=False) if a != b}
    rng = random.Random(seed)
    others = [(a, b) for a in chars for b in chars if a != b and (a, b) not in neighbours]
    for a, b in sorted(neighbours) + rng.sample(others, min(pairs, len(others))):
        for lead in ("", *walk.literals[:3]):
            pump(lead, a + b)
            pump(lead, a + " " + b)
    rest = sorted(lines - set(repetitions))
    if limit is not None and len(repetitions) > limit // 2:
        repetitions = sorted(rng.sample(repetitions, limit // 2))
    if limit is not None and len(repetitions) + len(rest) > limit:
        rest = rng.sample(rest, max(0, limit - len(repetitions)))
    return repetitions + sorted(rest)


def hostile_lines(pattern: str | re.Pattern[str], length: int = 20_000, **kwargs: object) -> list[str]:
    """The hostile lines of `pattern` (hostile_pumps), each about `length` characters long."""
    return [p.at(length) for p in hostile_pumps(pattern, **kwargs)]
