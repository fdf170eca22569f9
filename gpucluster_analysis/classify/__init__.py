"""Failure classification of job logs: signatures and failure evidence (rules.py) and the matcher (engine.py).

Pure functions: nothing here prints, exits or touches the store.
"""

from __future__ import annotations

from gpucluster_analysis.classify.engine import (
    Classification,
    Evidence,
    Match,
    classify_bytes,
    classify_file,
    classify_text,
)
from gpucluster_analysis.classify.rules import CATEGORIES, Signature, load_signatures

__all__ = [
    "CATEGORIES",
    "Classification",
    "Evidence",
    "Match",
    "Signature",
    "classify_bytes",
    "classify_file",
    "classify_text",
    "load_signatures",
]
