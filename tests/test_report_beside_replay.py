"""The report queries that run while the replay computes (report/build.py) read none of its
results: each would otherwise read a table not yet made, or one of the previous report."""

from __future__ import annotations

import re

from gpucluster_analysis.report.build import BESIDE_REPLAY_QUERIES, REPORT_QUERIES
from gpucluster_analysis.report.tables import REPLAY_JOBS_TABLE, REPORT_TABLES
from gpucluster_analysis.sqlfiles import load_sql


def test_queries_beside_the_replay_read_none_of_its_tables() -> None:
    after_replay = {REPLAY_JOBS_TABLE, *(table for table, _query in REPORT_TABLES)}
    assert set(BESIDE_REPLAY_QUERIES) <= set(REPORT_QUERIES)
    for name in BESIDE_REPLAY_QUERIES:
        sql = "\n".join(line.split("--", 1)[0] for line in load_sql("queries", name).splitlines())
        read = {t for t in after_replay if re.search(rf"\b{t}\b", sql)}
        assert not read, f"{name} reads {read}"
    # the others read some of them (else they could run beside the replay too)
    assert any(re.search(rf"\b{t}\b", load_sql("queries", "queue_delay_by_vc")) for t in after_replay)
