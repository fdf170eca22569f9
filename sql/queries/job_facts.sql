-- job_facts: the jobs.csv rows (temp table report_jobs) with the job-level attributes
-- the report groups by: size bucket, placement, server sharing.
-- Parameters: none.
-- Output: every jobs.csv column, plus size_bucket ('1', '2-4', '5-8', '>8', 'unknown'),
-- size_order (1..5, for sorting), placement ('packed' = 1 server, 'spread' = 2+ servers,
-- NULL without an allocation), shares_server (NULL for jobs without a timed allocation),
-- job_key (temp table job_keys; NULL for jobs without an attempt window).
SELECT r.*,
       CASE WHEN r.num_gpus IS NULL THEN 'unknown'
            WHEN r.num_gpus <= 1 THEN '1'
            WHEN r.num_gpus <= 4 THEN '2-4'
            WHEN r.num_gpus <= 8 THEN '5-8'
            ELSE '>8' END AS size_bucket,
       CASE WHEN r.num_gpus IS NULL THEN 5
            WHEN r.num_gpus <= 1 THEN 1
            WHEN r.num_gpus <= 4 THEN 2
            WHEN r.num_gpus <= 8 THEN 3
            ELSE 4 END AS size_order,
       CASE WHEN r.num_servers IS NULL THEN NULL
            WHEN r.num_servers = 1 THEN 'packed'
            ELSE 'spread' END AS placement,
       c.shares_server,
       k.job_key
FROM report_jobs r
LEFT JOIN job_colocation c USING (source, job_id)
LEFT JOIN job_keys k USING (source, job_id)
