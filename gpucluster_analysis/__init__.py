"""gca: characterize a multi-tenant GPU cluster from its raw logs.

The command line (`gca`) is a thin client of this package: `ingest` loads raw
scheduler and telemetry logs into one DuckDB file, `report` turns it into an
HTML report and CSV tables, `synth` writes a synthetic trace with known answers.
"""

__version__ = "0.1.0"
