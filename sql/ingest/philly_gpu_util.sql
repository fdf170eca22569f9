-- Load one Philly cluster_gpu_util file (time TZ, machine, one column per GPU) as long-form gpu_samples.
-- Parameters: $path, $file_id, $columns (the reader's column struct: t, machine_id, g0..gN),
-- $header (whether line 1 is a header).
-- Two streaming passes and no staging table, so memory stays flat on a 45M-row file:
-- pass 1 stores the good rows, while DuckDB's reader records rows of the wrong
-- width or with non-numeric cells in gca_csv_rejects (with line numbers);
-- pass 2 rejects rows that parse but make no sense (unreadable time, no machine,
-- a value outside 0-100); the loader fills in their line numbers.
-- The trailing comma of upstream data rows needs no column: the reader accepts
-- one empty trailing field and rejects a row with a real extra value.

INSERT INTO gpu_samples (sample_at, machine_id, gpu_index, util_pct, file_id)
SELECT sample_at, machine_id, CAST(substr(gpu, 2) AS SMALLINT), util, $file_id
FROM (
    UNPIVOT (
        SELECT sample_at, trim(machine_id) AS machine_id, COLUMNS('^g\d+$')
        FROM (
            SELECT *, philly_util_time_utc(t) AS sample_at
            FROM philly_csv($path, $header, $columns)
        )
        WHERE sample_at IS NOT NULL
          AND nullif(trim(machine_id), '') IS NOT NULL
          AND coalesce(greatest(*COLUMNS('^g\d+$')) <= 100 AND least(*COLUMNS('^g\d+$')) >= 0, true)
    )
    ON COLUMNS('^g\d+$') INTO NAME gpu VALUE util
);

INSERT INTO rejects (file_id, line, reason, text)
SELECT $file_id, NULL, problem, concat_ws(',', trim(t), trim(machine_id))
FROM (
    SELECT t, machine_id,
        CASE
            WHEN philly_util_time_utc(t) IS NULL THEN 'unreadable time ' || coalesce(t, '(empty)')
            WHEN nullif(trim(machine_id), '') IS NULL THEN 'row without a machine id'
            WHEN max_util > 100 OR min_util < 0 THEN 'GPU utilization outside 0-100'
        END AS problem
    FROM (
        SELECT t, machine_id, greatest(*COLUMNS('^g\d+$')) AS max_util, least(*COLUMNS('^g\d+$')) AS min_util
        FROM philly_csv_parsable($path, $header, $columns)
    )
)
WHERE problem IS NOT NULL;
