-- job_facts: the jobs.csv rows (temp table report_jobs) with the job-level attributes the
-- report groups by: size bucket and placement (defined once, in the temp table job_keys)
-- and server sharing (temp table job_colocation).
-- Parameters: none.
-- Output: every jobs.csv column, plus size_bucket ('0', '<1', '1', '2-4', '5-8', '>8',
-- 'unknown'; job_keys.sql), size_order (1..7, for sorting), placement ('packed' = 1 server, 'spread' = 2+ servers,
-- NULL without an allocation), shares_server (NULL for jobs without a timed allocation),
-- job_key (temp table job_keys).
SELECT r.*,
       k.size_bucket,
       k.size_order,
       k.placement,
       c.shares_server,
       k.job_key
FROM report_jobs r
LEFT JOIN job_keys k USING (source, job_id)
LEFT JOIN job_colocation c USING (source, job_id)
