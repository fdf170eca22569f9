-- Load one Philly cluster_gpu_util file (time TZ, machine, one column per GPU) as long-form gpu_samples.
-- Parameters: $path, $file_id, $columns (the reader's column struct: t, machine_id, g0..gN),
-- $header (whether line 1 is a header), $first_gpu (the name of the first g column).
-- One streaming pass and no staging table, so memory stays flat on a 58M-row file.
-- DuckDB's reader records rows of the wrong width or with non-numeric cells in
-- gca_csv_rejects (with line numbers). Rows that parse but make no sense
-- (unreadable time, no machine, a value outside 0-100) are found in the same scan:
-- each yields one marker row (file_id = -$file_id, machine_id = reason, newline,
-- reject text), which the next two statements move to rejects before the file's
-- transaction commits; the loader fills in their line numbers. Reading the file a
-- second time for them cost a quarter of the file's load time.
-- The trailing comma of upstream data rows needs no column: the reader accepts
-- one empty trailing field and rejects a row with a real extra value.

INSERT INTO gpu_samples (sample_at, machine_id, gpu_index, util_pct, file_id)
SELECT coalesce(sample_at, TIMESTAMP '1970-01-01'), machine_id,
       CASE WHEN problem IS NULL THEN CAST(substr(gpu, 2) AS SMALLINT) ELSE -1 END,
       util,
       CASE WHEN problem IS NULL THEN $file_id ELSE -$file_id END
FROM (
    -- A marker row keeps exactly one cell (the first GPU's, emptied), hence INCLUDE NULLS.
    SELECT sample_at, problem,
           CASE WHEN problem IS NULL THEN machine_id
                ELSE problem || chr(10) || concat_ws(',', trim(t), trim(machine_text)) END AS machine_id,
           CASE WHEN problem IS NULL THEN COLUMNS('^g\d+$') END
    FROM (
        SELECT *,
            CASE
                WHEN sample_at IS NULL THEN 'unreadable time ' || coalesce(t, '(empty)')
                WHEN machine_id IS NULL THEN 'row without a machine id'
                WHEN max_util > 100 OR min_util < 0 THEN 'GPU utilization outside 0-100'
            END AS problem
        FROM (
            SELECT t, philly_util_time_utc(t) AS sample_at, machine_id AS machine_text,
                   nullif(trim(machine_id), '') AS machine_id, COLUMNS('^g\d+$'),
                   greatest(*COLUMNS('^g\d+$')) AS max_util, least(*COLUMNS('^g\d+$')) AS min_util
            FROM philly_csv($path, $header, $columns)
        )
    )
) UNPIVOT INCLUDE NULLS (util FOR gpu IN (COLUMNS('^g\d+$')))
WHERE util IS NOT NULL OR (problem IS NOT NULL AND gpu = $first_gpu);

INSERT INTO rejects (file_id, line, reason, text)
SELECT $file_id, NULL, split_part(machine_id, chr(10), 1), substr(machine_id, strpos(machine_id, chr(10)) + 1)
FROM gpu_samples WHERE file_id = -$file_id
ORDER BY rowid;

DELETE FROM gpu_samples WHERE file_id = -$file_id;
