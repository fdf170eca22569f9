"""Key findings: the page opens with one sentence from each section, linked to it.

Each section leads with its answer (its first `finding` paragraph); the first sentence of
each, in section order, is the report at a glance.
"""

from __future__ import annotations

import re

from gpucluster_analysis.report.sections.blocks import Findings, Paragraph, Section

MOST = 8
# A sentence ends at `.`, `!` or `?` followed by a blank and a capital (not inside `52.3%`,
# `p<0.001` or `e.g. the`).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def section(sections: list[Section]) -> Section | None:
    """None when no section has a finding."""
    items = []
    for s in sections:
        lead = next((b.text for b in s.blocks if isinstance(b, Paragraph) and b.kind == "finding"), None)
        if lead:
            items.append((s.id, s.title, first_sentence(lead)))
    if not items:
        return None
    key = Section("key-findings", "Key findings")
    key.add(Findings(items[:MOST]))
    return key


def first_sentence(text: str) -> str:
    sentence = _SENTENCE_END.split(text.strip(), maxsplit=1)[0]
    return sentence if sentence.endswith((".", "!", "?")) else sentence + "."
