-- Load one Philly cluster_mem_util file (time TZ, machine_id, mem_total, mem_free; KiB) into host_samples.
-- Parameters: $path, $file_id, $columns (t, machine_id, mem_total, mem_free), $header.

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
        WHEN mem_total < 0 OR mem_free < 0 OR mem_free > mem_total THEN 'memory free outside 0..total'
    END AS problem
FROM stage_host;

INSERT INTO rejects (file_id, line, reason, text)
SELECT $file_id, NULL, problem, concat_ws(',', trim(t), trim(machine_id)) FROM stage_host_checked WHERE problem IS NOT NULL;

INSERT INTO host_samples (sample_at, machine_id, mem_total_kib, mem_free_kib, file_id)
SELECT sample_at, trim(machine_id), mem_total, mem_free, $file_id
FROM stage_host_checked WHERE problem IS NULL AND (mem_total IS NOT NULL OR mem_free IS NOT NULL);
