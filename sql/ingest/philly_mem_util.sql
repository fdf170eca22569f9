-- Load one Philly cluster_mem_util file (time TZ, machine_id, mem_total, mem_free; KiB) into host_samples.
-- Parameters: $path, $file_id, $columns (t, machine_id, mem_total, mem_free), $header.
-- Two streaming passes, as in philly_gpu_util.sql: good rows, then rows that parse but make no sense.

INSERT INTO host_samples (sample_at, machine_id, mem_total_kib, mem_free_kib, file_id)
SELECT sample_at, trim(machine_id), mem_total, mem_free, $file_id
FROM (
    SELECT *, philly_util_time_utc(t) AS sample_at
    FROM philly_csv($path, $header, $columns)
)
WHERE sample_at IS NOT NULL
  AND nullif(trim(machine_id), '') IS NOT NULL
  AND (mem_total IS NOT NULL OR mem_free IS NOT NULL)
  AND coalesce(mem_total >= 0 AND mem_free >= 0 AND mem_free <= mem_total, true);

INSERT INTO rejects (file_id, line, reason, text)
SELECT $file_id, NULL, problem, concat_ws(',', trim(t), trim(machine_id))
FROM (
    SELECT t, machine_id,
        CASE
            WHEN philly_util_time_utc(t) IS NULL THEN 'unreadable time ' || coalesce(t, '(empty)')
            WHEN nullif(trim(machine_id), '') IS NULL THEN 'row without a machine id'
            WHEN mem_total < 0 OR mem_free < 0 OR mem_free > mem_total THEN 'memory free outside 0..total'
        END AS problem
    FROM philly_csv_parsable($path, $header, $columns)
)
WHERE problem IS NOT NULL;
