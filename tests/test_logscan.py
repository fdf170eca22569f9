"""logscan: the lines holding a literal, found by searching the whole buffer, are those a
plain split-and-test finds; the trie regex matches exactly its words."""

import random
import re

from gpucluster_analysis.logscan import lines_holding, offset_after_line, read_parts, trie_pattern


def _plain(data: bytes, trigger: re.Pattern[bytes]) -> list[tuple[int, bytes]]:
    return [(n, line) for n, line in enumerate(data.split(b"\n"), 1) if trigger.search(line.lower())]


def test_lines_holding_equals_split_and_test_on_random_logs():
    words = ["error", "cuda", "nccl", "oom", "err"]
    trigger = re.compile(trie_pattern(sorted(words)).encode())
    rng = random.Random(7)
    alphabet = [
        b"a",
        b"E",
        b"r",
        b"o",
        b"C",
        b"u",
        b"d",
        b"n",
        b"l",
        b"m",
        b" ",
        b"\n",
        b"\r",
        b"RROR",
        b"cuDA",
        b"nCcL",
    ]
    for _ in range(300):
        data = b"".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 200)))
        assert list(lines_holding(data, trigger)) == _plain(data, trigger), data


def test_lines_holding_edges():
    trigger = re.compile(trie_pattern(["oom"]).encode())
    # a hit on the first line, two hits on one line (listed once), a last line without newline
    data = b"OOM here\nnothing\nooM and oom\n\nlast oom"
    assert list(lines_holding(data, trigger)) == [(1, b"OOM here"), (3, b"ooM and oom"), (5, b"last oom")]
    assert list(lines_holding(b"", trigger)) == []


def test_trie_pattern_matches_exactly_its_words():
    words = ["a", "ab", "abc", "b.d", "x(y"]
    pattern = re.compile(f"(?:{trie_pattern(sorted(words))})")
    for w in words:
        assert pattern.fullmatch(w), w
    for other in ["", "abcd", "bxd", "x", "xy", "ac"]:
        assert not pattern.fullmatch(other), other


def test_read_parts_whole_and_cut(tmp_path):
    small = tmp_path / "small.log"
    small.write_bytes(b"0123456789")
    assert read_parts(small, head=4, tail=6) == (b"0123456789", None, 10)
    assert read_parts(small, head=3, tail=4) == (b"012", b"6789", 10)


def test_offset_after_line_by_hand():
    data = b"a\nbb\n\nccc"
    assert [offset_after_line(data, n) for n in range(6)] == [0, 2, 5, 6, 9, 9]
