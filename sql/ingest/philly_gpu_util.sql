-- Load one Philly cluster_gpu_util file (time TZ, machine, one column per GPU) as long-form gpu_samples.
-- Parameters: $path, $file_id, $columns (the reader's column struct: t, machine_id, g0..gN
-- [, extra_fields]), $header (whether line 1 is a header).
-- The CSV reader records rows of the wrong width or with non-numeric cells in
-- gca_csv_rejects (with line numbers); rows with an unreadable time or machine
-- or an impossible value are rejected here (line numbers filled in by the loader).

CREATE OR REPLACE TEMP TABLE stage_util AS
SELECT * FROM read_csv($path, header = $header, columns = $columns, delim = ',', quote = '',
                       escape = '', nullstr = ['NA', 'N/A', 'None', ''], auto_detect = false,
                       store_rejects = true, rejects_table = 'gca_csv_rejects',
                       rejects_scan = 'gca_csv_scans');

-- Upstream rows end in a comma; the reader reads that empty field as extra_fields.
-- Anything in it means the row had more fields than the header.
ALTER TABLE stage_util ADD COLUMN IF NOT EXISTS extra_fields VARCHAR;

CREATE OR REPLACE TEMP TABLE stage_util_checked AS
SELECT *,
    philly_util_time_utc(t) AS sample_at,
    CASE
        WHEN philly_util_time_utc(t) IS NULL THEN 'unreadable time ' || coalesce(t, '(empty)')
        WHEN nullif(trim(machine_id), '') IS NULL THEN 'row without a machine id'
        WHEN nullif(trim(extra_fields), '') IS NOT NULL THEN 'too many fields: more values than header columns'
        WHEN max_util > 100 OR min_util < 0 THEN 'GPU utilization outside 0-100'
    END AS problem
FROM (SELECT *, greatest(*COLUMNS('^g\d+$')) AS max_util, least(*COLUMNS('^g\d+$')) AS min_util FROM stage_util);

INSERT INTO rejects (file_id, line, reason, text)
SELECT $file_id, NULL, problem, concat_ws(',', trim(t), trim(machine_id)) FROM stage_util_checked WHERE problem IS NOT NULL;

INSERT INTO gpu_samples (sample_at, machine_id, gpu_index, util_pct, file_id)
SELECT sample_at, trim(machine_id), CAST(substr(gpu, 2) AS SMALLINT), util, $file_id
FROM (
    UNPIVOT (SELECT sample_at, machine_id, COLUMNS('^g\d+$') FROM stage_util_checked WHERE problem IS NULL)
    ON COLUMNS('^g\d+$') INTO NAME gpu VALUE util
);
