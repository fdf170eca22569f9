-- shard_overlaps: what two shards of a Parquet dataset both hold, which one store would have
-- held once: a job (source, job_id), or an ingested file (the same path with the same
-- content). Reads the reader's raw views (gca_dataset.<table>, with the shard column), of the
-- shards whose manifest is written (gca_dataset.shards).
-- Parameters: none.
-- Output: what (job or file), key, first_shard, second_shard, overlap_count (how many in all);
-- the first overlap in key order, empty when the shards are disjoint.
WITH overlapping AS (
    SELECT 'job' AS what, source || ' ' || job_id AS key, min(shard) AS first_shard, max(shard) AS second_shard
    FROM gca_dataset.jobs SEMI JOIN gca_dataset.shards USING (shard)
    GROUP BY source, job_id
    HAVING count(DISTINCT shard) > 1
    UNION ALL
    SELECT 'file', path, min(shard), max(shard)
    FROM gca_dataset.ingested_files SEMI JOIN gca_dataset.shards USING (shard)
    GROUP BY path, content_hash
    HAVING count(DISTINCT shard) > 1
)
SELECT what, key, first_shard, second_shard, count(*) OVER () AS overlap_count
FROM overlapping
ORDER BY what, key
LIMIT 1
