-- Load one Philly cluster_cpu_util file (time TZ, machine_id, cpu_util) into host_samples.
-- Parameters: $path, $file_id, $columns (t, machine_id, cpu_util), $header.

CREATE OR REPLACE TEMP TABLE stage_host AS
SELECT * FROM read_csv($path, header = $header, columns = $columns, delim = ',', quote = '',
                       escape = '', nullstr = ['NA', 'N/A', 'None', ''], auto_detect = false,
                       store_rejects = true, rejects_table = 'gca_csv_rejects',
                       rejects_scan = 'gca_csv_scans');

-- Upstream rows end in a comma; the reader reads that empty field as extra_fields.
-- Anything in it means the row had more fields than the header.
ALTER TABLE stage_host ADD COLUMN IF NOT EXISTS extra_fields VARCHAR;

CREATE OR REPLACE TEMP TABLE stage_host_checked AS
SELECT *,
    philly_util_time_utc(t) AS sample_at,
    CASE
        WHEN philly_util_time_utc(t) IS NULL THEN 'unreadable time ' || coalesce(t, '(empty)')
        WHEN nullif(trim(machine_id), '') IS NULL THEN 'row without a machine id'
        WHEN nullif(trim(extra_fields), '') IS NOT NULL THEN 'too many fields: more values than header columns'
        WHEN cpu_util < 0 OR cpu_util > 100 THEN 'CPU utilization outside 0-100'
    END AS problem
FROM stage_host;

INSERT INTO rejects (file_id, line, reason, text)
SELECT $file_id, NULL, problem, concat_ws(',', trim(t), trim(machine_id)) FROM stage_host_checked WHERE problem IS NOT NULL;

INSERT INTO host_samples (sample_at, machine_id, cpu_util_pct, file_id)
SELECT sample_at, trim(machine_id), cpu_util, $file_id
FROM stage_host_checked WHERE problem IS NULL AND cpu_util IS NOT NULL;
