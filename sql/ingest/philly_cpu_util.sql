-- Load one Philly cluster_cpu_util file (time TZ, machine_id, cpu_util) into host_samples.
-- Parameters: $path, $file_id, $columns (t, machine_id, cpu_util), $header.
-- Two streaming passes, as in philly_gpu_util.sql: good rows, then rows that parse but make no sense.

INSERT INTO host_samples (sample_at, machine_id, cpu_util_pct, file_id)
SELECT sample_at, trim(machine_id), cpu_util, $file_id
FROM (
    SELECT *, philly_util_time_utc(t) AS sample_at
    FROM philly_csv($path, $header, $columns)
)
WHERE sample_at IS NOT NULL
  AND nullif(trim(machine_id), '') IS NOT NULL
  AND cpu_util BETWEEN 0 AND 100;

INSERT INTO rejects (file_id, line, reason, text)
SELECT $file_id, NULL, problem, concat_ws(',', trim(t), trim(machine_id))
FROM (
    SELECT t, machine_id,
        CASE
            WHEN philly_util_time_utc(t) IS NULL THEN 'unreadable time ' || coalesce(t, '(empty)')
            WHEN nullif(trim(machine_id), '') IS NULL THEN 'row without a machine id'
            WHEN cpu_util < 0 OR cpu_util > 100 THEN 'CPU utilization outside 0-100'
        END AS problem
    FROM philly_csv_parsable($path, $header, $columns)
)
WHERE problem IS NOT NULL;
