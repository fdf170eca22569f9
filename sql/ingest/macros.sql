-- Macros the ingest scripts share. Created as temp macros on each ingest connection.

-- A Philly utilization time such as '2017-11-05 01:30:00 PST' to naive UTC.
-- The suffix carries the offset, which also settles the repeated fall-back hour.
-- A plain cast of the first 19 characters is about twice as fast as strptime on
-- tens of millions of rows; anything it cannot read is NULL and the row is rejected.
CREATE OR REPLACE TEMP MACRO philly_util_time_utc(t) AS (
    TRY_CAST(substr(t, 1, 19) AS TIMESTAMP)
    - to_hours(CASE substr(t, 20)
        WHEN ' PDT' THEN -7 WHEN ' PST' THEN -8
        WHEN ' MDT' THEN -6 WHEN ' MST' THEN -7
        WHEN ' CDT' THEN -5 WHEN ' CST' THEN -6
        WHEN ' EDT' THEN -4 WHEN ' EST' THEN -5
        WHEN ' UTC' THEN 0 WHEN ' GMT' THEN 0
      END)
);

-- The one way gca reads a Philly CSV file: columns as given (never sniffed), no
-- quoting, `NA` and friends as NULL. DuckDB's reader records rows of the wrong
-- width or with uncastable cells, with their line numbers, in gca_csv_rejects.
CREATE OR REPLACE TEMP MACRO philly_csv(path, has_header, cols) AS TABLE
SELECT * FROM read_csv(path, header = has_header, columns = cols, delim = ',', quote = '',
                       escape = '', nullstr = ['NA', 'N/A', 'None', ''], auto_detect = false,
                       store_rejects = true, rejects_table = 'gca_csv_rejects',
                       rejects_scan = 'gca_csv_scans');

-- The sanity bounds (gpucluster_analysis/bounds.py) come to each script as parameters
-- ($max_gpus_per_node, $gpu_bound, ...); these say what a row over them holds.
-- Whether `gpus` on `nodes` are more than `bound` a node (a row naming no nodes, or 0, has one).
CREATE OR REPLACE TEMP MACRO gca_gpus_over(gpus, nodes, bound) AS (
    gpus > CAST(bound AS BIGINT) * greatest(coalesce(nodes, 1), 1)
);

-- ' on one node', ' on 4 nodes': where a reason's GPU count stands.
CREATE OR REPLACE TEMP MACRO gca_on_nodes(nodes) AS (
    CASE WHEN coalesce(nodes, 1) <= 1 THEN ' on one node' ELSE ' on ' || nodes || ' nodes' END
);
