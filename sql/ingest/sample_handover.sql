-- Before a telemetry file is taken back (gca ingest --replace): each sample whose stored row is
-- the file's, and that other files of its kind hold in <table>_duplicates, is handed to the
-- first of them in the fixed order of files (by content hash, then file id; as
-- sample_duplicates.sql chooses), whose row is stored instead. The rest of what the file holds
-- then goes with it (ingest/forget.py). Parameters: $file_id, $heirs (the other files of its kind
-- holding rows aside), $from_at and $to_at (the first and last time of those rows).

CREATE OR REPLACE TEMP TABLE stage_sample_heirs AS
WITH aside AS (
    SELECT 'gpu_samples' AS sample_table, rowid AS row_id, file_id, machine_id, gpu_index, -1 AS instance, sample_at
    FROM gpu_samples_duplicates WHERE list_contains($heirs, file_id)
    UNION ALL
    SELECT 'gpu_sample_details', rowid, file_id, machine_id, gpu_index, coalesce(gpu_instance_id, -1), sample_at
    FROM gpu_sample_details_duplicates WHERE list_contains($heirs, file_id)
    UNION ALL
    SELECT 'host_samples', rowid, file_id, machine_id, -1, -1, sample_at
    FROM host_samples_duplicates WHERE list_contains($heirs, file_id)
),
gone AS (
    SELECT 'gpu_samples' AS sample_table, machine_id, gpu_index, -1 AS instance, sample_at
    FROM gpu_samples WHERE file_id = $file_id AND sample_at BETWEEN $from_at AND $to_at
    UNION ALL
    SELECT 'gpu_sample_details', machine_id, gpu_index, coalesce(gpu_instance_id, -1), sample_at
    FROM gpu_sample_details WHERE file_id = $file_id AND sample_at BETWEEN $from_at AND $to_at
    UNION ALL
    SELECT 'host_samples', machine_id, -1, -1, sample_at
    FROM host_samples WHERE file_id = $file_id AND sample_at BETWEEN $from_at AND $to_at
)
SELECT a.sample_table, arg_min(a.row_id, (f.content_hash, a.file_id, a.row_id)) AS row_id
FROM aside a
SEMI JOIN gone g USING (sample_table, machine_id, gpu_index, instance, sample_at)
JOIN ingested_files f ON f.file_id = a.file_id
GROUP BY a.sample_table, a.machine_id, a.gpu_index, a.instance, a.sample_at;

INSERT INTO gpu_samples BY NAME
SELECT * FROM gpu_samples_duplicates
WHERE rowid IN (SELECT row_id FROM stage_sample_heirs WHERE sample_table = 'gpu_samples');

DELETE FROM gpu_samples_duplicates
WHERE rowid IN (SELECT row_id FROM stage_sample_heirs WHERE sample_table = 'gpu_samples');

INSERT INTO gpu_sample_details BY NAME
SELECT * FROM gpu_sample_details_duplicates
WHERE rowid IN (SELECT row_id FROM stage_sample_heirs WHERE sample_table = 'gpu_sample_details');

DELETE FROM gpu_sample_details_duplicates
WHERE rowid IN (SELECT row_id FROM stage_sample_heirs WHERE sample_table = 'gpu_sample_details');

INSERT INTO host_samples BY NAME
SELECT * FROM host_samples_duplicates
WHERE rowid IN (SELECT row_id FROM stage_sample_heirs WHERE sample_table = 'host_samples');

DELETE FROM host_samples_duplicates
WHERE rowid IN (SELECT row_id FROM stage_sample_heirs WHERE sample_table = 'host_samples');
