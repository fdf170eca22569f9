-- The report's heaviest results kept from ingest (issue 11, part 2). `gca ingest` computes,
-- once it has stored its files, what the report would otherwise compute from hundreds of
-- millions of samples each time (the per-machine sample facts, the samples attributed to
-- jobs, host utilization by whether a job ran) into tables kept_<query> (the columns of
-- sql/queries/<query>.sql), and records here for which inputs: a digest of the store's
-- ingested files, its schema version and gca's SQL text. The report uses a kept result only
-- while that digest is the store's current one, so any later ingest, --replace or another
-- gca makes it stale (gpucluster_analysis/analyze/kept.py).
-- Not a schema version of its own: a store without this table (or with it empty) is
-- complete, and its reports compute everything as before; the next ingest adds it. (A
-- version would also have made every Parquet dataset of version 8 unreadable until written
-- again; kept results are never exported.)
CREATE TABLE IF NOT EXISTS kept_results (
    query    VARCHAR NOT NULL,     -- the named query, e.g. attributed_util; its rows in kept_<query>
    inputs   VARCHAR NOT NULL,     -- digest of what it was computed from (analyze/kept.py)
    seconds  DOUBLE NOT NULL,      -- what computing it took
    kept_at  TIMESTAMP NOT NULL    -- UTC
);
