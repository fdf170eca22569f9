-- Load one Philly cluster_gpu_util file (time TZ, machine, one column per GPU) as long-form gpu_samples.
-- Parameters: $path, $file_id, $columns (the reader's column struct: t, machine_id, g0..gN),
-- $header (whether line 1 is a header), $gpu_indexes (the GPU index of each g column, in order,
-- each below the bound of GPUs per node: the loader refuses a header past it), and $window_start,
-- $window_end, $outside_years (the years samples may fall in), $util_min, $util_max, $util_range
-- (utilization's range; all of gpucluster_analysis/bounds.py).
-- One streaming pass and no staging table, so memory stays flat on a 58M-row file.
-- DuckDB's reader records rows of the wrong width or with non-numeric cells in
-- gca_csv_rejects (with line numbers). Rows that parse but make no sense
-- (unreadable time, no machine, a value outside the range) are found in the same scan:
-- each yields one marker row (file_id = -$file_id, gpu_index = -1, machine_id = reason,
-- newline, reject text), which the next two statements move to rejects before the file's
-- transaction commits; the loader fills in their line numbers. Reading the file a
-- second time for them cost a quarter of the file's load time.
-- The trailing comma of upstream data rows needs no column: the reader accepts
-- one empty trailing field and rejects a row with a real extra value.

INSERT INTO gpu_samples (sample_at, machine_id, gpu_index, util_pct, file_id)
SELECT coalesce(sample_at, TIMESTAMP '1970-01-01'), machine_id, gpu_index, util,
       CASE WHEN gpu_index >= 0 THEN $file_id ELSE -$file_id END
FROM (
    -- One output row per GPU cell (unnesting a list is cheaper than UNPIVOT plus parsing
    -- the index out of the column name), or one marker row for a row that makes no sense.
    SELECT sample_at,
           CASE WHEN ok THEN machine_id
                ELSE problem || chr(10) || concat_ws(',', trim(t), trim(machine_text)) END AS machine_id,
           unnest(CASE WHEN ok THEN $gpu_indexes::SMALLINT[] ELSE [-1::SMALLINT] END) AS gpu_index,
           unnest(CASE WHEN ok THEN list_value(*COLUMNS('^g\d+$')) ELSE [NULL::DOUBLE] END) AS util
    FROM (
        SELECT *, problem IS NULL AS ok FROM (
            SELECT *,
                CASE
                    WHEN sample_at IS NULL THEN 'unreadable time ' || coalesce(t, '(empty)')
                    WHEN NOT (sample_at >= $window_start AND sample_at < $window_end) THEN 'time ' || trim(t) || $outside_years
                    WHEN machine_id IS NULL THEN 'row without a machine id'
                    WHEN max_util > $util_max OR min_util < $util_min THEN 'GPU utilization outside ' || $util_range
                END AS problem
            FROM (
                SELECT t, philly_util_time_utc(t) AS sample_at, machine_id AS machine_text,
                       nullif(trim(machine_id), '') AS machine_id, COLUMNS('^g\d+$'),
                       greatest(*COLUMNS('^g\d+$')) AS max_util, least(*COLUMNS('^g\d+$')) AS min_util
                FROM philly_csv($path, $header, $columns)
            )
        )
    )
)
WHERE util IS NOT NULL OR gpu_index < 0;

INSERT INTO rejects (file_id, line, reason, text)
SELECT $file_id, NULL, split_part(machine_id, chr(10), 1), substr(machine_id, strpos(machine_id, chr(10)) + 1)
FROM gpu_samples WHERE file_id = -$file_id
ORDER BY rowid;

DELETE FROM gpu_samples WHERE file_id = -$file_id;
