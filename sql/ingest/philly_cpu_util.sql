-- Load one Philly cluster_cpu_util file (time TZ, machine_id, cpu_util) into host_samples.
-- Parameters: $path, $file_id, $columns (t, machine_id, cpu_util), $header, and $window_start, $window_end,
-- $outside_years (the years samples may fall in), $cpu_util_min, $cpu_util_max, $cpu_util_range
-- (its range; all of gpucluster_analysis/bounds.py).
-- One streaming pass, as in philly_gpu_util.sql: rows that parse but make no sense
-- ride along as marker rows (file_id = -$file_id) and are moved to rejects.
-- A row whose value is NA stores nothing and is no reject.

INSERT INTO host_samples (sample_at, machine_id, cpu_util_pct, file_id)
SELECT coalesce(sample_at, TIMESTAMP '1970-01-01'),
       CASE WHEN problem IS NULL THEN machine_id ELSE problem || chr(10) || concat_ws(',', trim(t), trim(machine_text)) END,
       CASE WHEN problem IS NULL THEN cpu_util END,
       CASE WHEN problem IS NULL THEN $file_id ELSE -$file_id END
FROM (
    SELECT *,
        CASE
            WHEN sample_at IS NULL THEN 'unreadable time ' || coalesce(t, '(empty)')
            WHEN NOT (sample_at >= $window_start AND sample_at < $window_end) THEN 'time ' || trim(t) || $outside_years
            WHEN machine_id IS NULL THEN 'row without a machine id'
            WHEN cpu_util < $cpu_util_min OR cpu_util > $cpu_util_max THEN 'CPU utilization outside ' || $cpu_util_range
        END AS problem
    FROM (
        SELECT t, philly_util_time_utc(t) AS sample_at, machine_id AS machine_text,
               nullif(trim(machine_id), '') AS machine_id, cpu_util
        FROM philly_csv($path, $header, $columns)
    )
)
-- The cheap test first: DuckDB then evaluates `problem` (and its time conversion) here
-- only for rows without a value, which halves the statement's CPU time.
WHERE cpu_util IS NOT NULL OR problem IS NOT NULL;

INSERT INTO rejects (file_id, line, reason, text)
SELECT $file_id, NULL, split_part(machine_id, chr(10), 1), substr(machine_id, strpos(machine_id, chr(10)) + 1)
FROM host_samples WHERE file_id = -$file_id
ORDER BY rowid;

DELETE FROM host_samples WHERE file_id = -$file_id;
