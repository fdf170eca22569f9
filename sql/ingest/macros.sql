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
