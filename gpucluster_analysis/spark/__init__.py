"""`gca report --engine spark`: the heavy queries as Spark SQL over a Parquet dataset.

PySpark and SQLGlot are an optional extra (`pip install "gpucluster-analysis[spark]"`), and
Spark needs a Java runtime (17 or newer). `require()` says what is missing, in one line.
"""

from __future__ import annotations

import os
import shutil

from gpucluster_analysis.errors import InputError

INSTALL_HINT = (
    'install it with: pip install "gpucluster-analysis[spark]" (and a Java 17+ runtime, e.g. openjdk-17-jre-headless)'
)


def require() -> None:
    """Raise a one-line InputError when PySpark, SQLGlot or Java is missing."""
    missing = []
    for module in ("pyspark", "sqlglot"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise InputError(
            f"--engine spark needs {' and '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} not installed",
            hint=INSTALL_HINT,
        )
    java_home = os.environ.get("JAVA_HOME")
    if not (java_home and os.path.exists(os.path.join(java_home, "bin", "java"))) and not shutil.which("java"):
        raise InputError(
            "--engine spark needs a Java runtime (17 or newer): no java on PATH and no JAVA_HOME",
            hint="install one, e.g. apt-get install openjdk-17-jre-headless, or set JAVA_HOME",
        )
