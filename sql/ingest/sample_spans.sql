-- Where the samples of some files lie (sample_spans): per file and machine, the first and last
-- time and the count of the rows each holds in the sample tables, stored or set aside
-- (<table>_duplicates). Parameters: $file_ids (files of one source kind), $kind (that kind),
-- $lo and $hi (the least and greatest of $file_ids: the range lets DuckDB skip the row groups
-- of other files by their zone maps, so that only these files' rows are read).

INSERT INTO sample_spans (source_kind, machine_id, first_at, last_at, samples, file_id)
SELECT $kind, machine_id, min(sample_at), max(sample_at), count(*), file_id
FROM (
    SELECT file_id, machine_id, sample_at FROM gpu_samples WHERE file_id BETWEEN $lo AND $hi
    UNION ALL
    SELECT file_id, machine_id, sample_at FROM gpu_sample_details WHERE file_id BETWEEN $lo AND $hi
    UNION ALL
    SELECT file_id, machine_id, sample_at FROM host_samples WHERE file_id BETWEEN $lo AND $hi
    UNION ALL
    SELECT file_id, machine_id, sample_at FROM gpu_samples_duplicates WHERE file_id BETWEEN $lo AND $hi
    UNION ALL
    SELECT file_id, machine_id, sample_at FROM gpu_sample_details_duplicates WHERE file_id BETWEEN $lo AND $hi
    UNION ALL
    SELECT file_id, machine_id, sample_at FROM host_samples_duplicates WHERE file_id BETWEEN $lo AND $hi
)
WHERE list_contains($file_ids, file_id)
GROUP BY file_id, machine_id;
