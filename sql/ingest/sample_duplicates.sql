-- A file's samples that are already stored (docs/schema.md, "Telemetry samples are stored
-- once"): a sample is its source kind, machine, GPU (and MIG instance) and time, and a row of the
-- file compared whose sample a stored row of a file of its kind before it stands for is a
-- duplicate. It goes to <table>_duplicates, where taking the other file back (--replace) finds
-- it; where its values differ from the stored row's, the row of the file first in a fixed order
-- of files (by content hash, then file id) is the one stored, so that the order files are
-- ingested in never changes what the store holds. Each sample table is decided on its own, so a
-- file that adds a measure to a stored sample (a detail the other file lacked) stores that row.
-- Parameters: $file_id (the file compared), $holders (the files before it whose spans overlap
-- its spans: sample_overlaps.sql), $files ($holders and $file_id), $from_at and $to_at (the
-- overlaps' first and last time). The lists and times filter the scans by row groups (zone
-- maps), so only the overlapping part of the store is read.
-- Output: the rows moved, and temp table stage_sample_matches (sample_table, row_id, stored_row,
-- stored_file, machine_id, gpu_index, instance, sample_at, same), from which ingest/samples.py
-- counts the duplicates.

-- Each row of the file whose sample a stored row of an overlapping file stands for (the same
-- identity: a host sample has no GPU, a whole GPU no MIG instance: -1), and whether their values
-- are the same. Rows meet only inside the overlaps, as each lies in its file's spans.
CREATE OR REPLACE TEMP TABLE stage_sample_matches AS
SELECT 'gpu_samples' AS sample_table, n.row_id, s.row_id AS stored_row, s.file_id AS stored_file, n.machine_id,
       n.gpu_index, -1 AS instance, n.sample_at, n.v IS NOT DISTINCT FROM s.v AS same
FROM (SELECT rowid AS row_id, machine_id, gpu_index, sample_at, row(*COLUMNS(* EXCLUDE (file_id))) AS v
      FROM gpu_samples WHERE file_id = $file_id AND sample_at BETWEEN $from_at AND $to_at) n
JOIN (SELECT rowid AS row_id, file_id, machine_id, gpu_index, sample_at, row(*COLUMNS(* EXCLUDE (file_id))) AS v
      FROM gpu_samples WHERE list_contains($holders, file_id) AND sample_at BETWEEN $from_at AND $to_at) s
  USING (machine_id, gpu_index, sample_at)
UNION ALL
SELECT 'gpu_sample_details', n.row_id, s.row_id, s.file_id, n.machine_id, n.gpu_index, n.instance, n.sample_at,
       n.v IS NOT DISTINCT FROM s.v
FROM (SELECT rowid AS row_id, machine_id, gpu_index, coalesce(gpu_instance_id, -1) AS instance, sample_at,
             row(*COLUMNS(* EXCLUDE (file_id))) AS v
      FROM gpu_sample_details WHERE file_id = $file_id AND sample_at BETWEEN $from_at AND $to_at) n
JOIN (SELECT rowid AS row_id, file_id, machine_id, gpu_index, coalesce(gpu_instance_id, -1) AS instance, sample_at,
             row(*COLUMNS(* EXCLUDE (file_id))) AS v
      FROM gpu_sample_details WHERE list_contains($holders, file_id) AND sample_at BETWEEN $from_at AND $to_at) s
  USING (machine_id, gpu_index, instance, sample_at)
UNION ALL
SELECT 'host_samples', n.row_id, s.row_id, s.file_id, n.machine_id, -1, -1, n.sample_at, n.v IS NOT DISTINCT FROM s.v
FROM (SELECT rowid AS row_id, machine_id, sample_at, row(*COLUMNS(* EXCLUDE (file_id))) AS v
      FROM host_samples WHERE file_id = $file_id AND sample_at BETWEEN $from_at AND $to_at) n
JOIN (SELECT rowid AS row_id, file_id, machine_id, sample_at, row(*COLUMNS(* EXCLUDE (file_id))) AS v
      FROM host_samples WHERE list_contains($holders, file_id) AND sample_at BETWEEN $from_at AND $to_at) s
  USING (machine_id, sample_at);

-- The new rows kept instead of the stored ones: their values differ and their file comes first of
-- every file holding the sample (the stored row's, and those holding it aside).
CREATE OR REPLACE TEMP TABLE stage_sample_kept AS
WITH differing AS (
    SELECT sample_table, row_id, stored_file, machine_id, gpu_index, instance, sample_at
    FROM stage_sample_matches WHERE NOT same
),
holders AS (
    SELECT sample_table, row_id, stored_file AS file_id FROM differing
    UNION ALL
    SELECT d.sample_table, d.row_id, a.file_id
    FROM differing d
    JOIN (SELECT 'gpu_samples' AS sample_table, file_id, machine_id, gpu_index, -1 AS instance, sample_at
          FROM gpu_samples_duplicates
          UNION ALL
          SELECT 'gpu_sample_details', file_id, machine_id, gpu_index, coalesce(gpu_instance_id, -1), sample_at
          FROM gpu_sample_details_duplicates
          UNION ALL
          SELECT 'host_samples', file_id, machine_id, -1, -1, sample_at FROM host_samples_duplicates) a
      USING (sample_table, machine_id, gpu_index, instance, sample_at)
    WHERE list_contains($holders, a.file_id)
),
ranks AS (
    SELECT file_id, row_number() OVER (ORDER BY content_hash, file_id) AS file_rank
    FROM ingested_files WHERE list_contains($files, file_id)
)
SELECT h.sample_table, h.row_id
FROM holders h JOIN ranks r USING (file_id)
GROUP BY h.sample_table, h.row_id
HAVING min(r.file_rank) > (SELECT file_rank FROM ranks WHERE file_id = $file_id);

-- The rows that go aside: the new file's where the stored row stays, the stored rows where the new file's is kept.
CREATE OR REPLACE TEMP TABLE stage_sample_moves AS
SELECT sample_table, row_id FROM stage_sample_matches m ANTI JOIN stage_sample_kept k USING (sample_table, row_id)
UNION ALL
SELECT sample_table, m.stored_row FROM stage_sample_matches m SEMI JOIN stage_sample_kept k USING (sample_table, row_id);

INSERT INTO gpu_samples_duplicates BY NAME
SELECT * FROM gpu_samples
WHERE list_contains($files, file_id) AND sample_at BETWEEN $from_at AND $to_at
  AND rowid IN (SELECT row_id FROM stage_sample_moves WHERE sample_table = 'gpu_samples');

DELETE FROM gpu_samples
WHERE list_contains($files, file_id) AND sample_at BETWEEN $from_at AND $to_at
  AND rowid IN (SELECT row_id FROM stage_sample_moves WHERE sample_table = 'gpu_samples');

INSERT INTO gpu_sample_details_duplicates BY NAME
SELECT * FROM gpu_sample_details
WHERE list_contains($files, file_id) AND sample_at BETWEEN $from_at AND $to_at
  AND rowid IN (SELECT row_id FROM stage_sample_moves WHERE sample_table = 'gpu_sample_details');

DELETE FROM gpu_sample_details
WHERE list_contains($files, file_id) AND sample_at BETWEEN $from_at AND $to_at
  AND rowid IN (SELECT row_id FROM stage_sample_moves WHERE sample_table = 'gpu_sample_details');

INSERT INTO host_samples_duplicates BY NAME
SELECT * FROM host_samples
WHERE list_contains($files, file_id) AND sample_at BETWEEN $from_at AND $to_at
  AND rowid IN (SELECT row_id FROM stage_sample_moves WHERE sample_table = 'host_samples');

DELETE FROM host_samples
WHERE list_contains($files, file_id) AND sample_at BETWEEN $from_at AND $to_at
  AND rowid IN (SELECT row_id FROM stage_sample_moves WHERE sample_table = 'host_samples');
