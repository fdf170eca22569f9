-- job_keys: every job of the store with a dense INTEGER key and the attributes the report
-- groups samples by, fixed before the one pass over gpu_samples (attributed_util) so that
-- pass can group by small integers instead of (source, job_id) strings.
-- num_gpus / num_servers are defined here once (jobs.csv takes them from this table): the
-- first attempt, by attempt_no, with GPUs (temp table attempt_sizes); failing that, the
-- first placed on machines (a CPU-only Slurm job: 0 GPUs; servers also when the GPU count
-- is unknown); failing that, the GPUs the job asked for (jobs.requested_gpus: a pending
-- Alibaba pod, a Helios job cancelled before it started), num_servers then staying NULL.
-- size_bucket and placement are defined here too; job_facts takes them.
-- Parameters: none.
-- Output: source, job_id, job_key (1..n in (source, job_id) order), status, num_gpus,
-- num_servers, size_bucket ('0' CPU-only, '<1' a fraction of a GPU, '1', '2-4' (above 1 up
-- to 4), '5-8', '>8', 'unknown'), size_order (1..7, in that order),
-- placement ('packed' = 1 server, 'spread' = 2+ servers, NULL without an allocation),
-- cohort (INTEGER, one per distinct (status, size_bucket, placement)).
-- Stage: every_job
WITH first_allocation AS (
    SELECT source, job_id,
           coalesce(arg_min(gpus, attempt_no) FILTER (WHERE gpus > 0),
                    arg_min(gpus, attempt_no) FILTER (WHERE gpus = 0 AND servers IS NOT NULL)) AS num_gpus,
           coalesce(arg_min(servers, attempt_no) FILTER (WHERE gpus > 0),
                    arg_min(servers, attempt_no) FILTER (WHERE coalesce(gpus, 0) = 0 AND servers IS NOT NULL)) AS num_servers
    FROM attempt_sizes
    GROUP BY source, job_id
),
sized AS (
    SELECT j.source, j.job_id, j.status, coalesce(f.num_gpus, j.requested_gpus) AS num_gpus, f.num_servers
    FROM jobs j
    LEFT JOIN first_allocation f USING (source, job_id)
),
described AS (
    SELECT s.source, s.job_id, s.status, s.num_gpus, s.num_servers,
           -- CPU-only jobs and fractional requests (a shared GPU) are buckets of their own
           CASE WHEN s.num_gpus IS NULL THEN 'unknown'
                WHEN s.num_gpus = 0 THEN '0'
                WHEN s.num_gpus < 1 THEN '<1'
                WHEN s.num_gpus <= 1 THEN '1'
                WHEN s.num_gpus <= 4 THEN '2-4'
                WHEN s.num_gpus <= 8 THEN '5-8'
                ELSE '>8' END AS size_bucket,
           CASE WHEN s.num_gpus IS NULL THEN 7
                WHEN s.num_gpus = 0 THEN 1
                WHEN s.num_gpus < 1 THEN 2
                WHEN s.num_gpus <= 1 THEN 3
                WHEN s.num_gpus <= 4 THEN 4
                WHEN s.num_gpus <= 8 THEN 5
                ELSE 6 END AS size_order,
           CASE WHEN s.num_servers IS NULL THEN NULL
                WHEN s.num_servers = 1 THEN 'packed'
                ELSE 'spread' END AS placement
    FROM sized s
)
SELECT *,
       CAST(row_number() OVER (ORDER BY source, job_id) AS INTEGER) AS job_key,
       CAST(dense_rank() OVER (ORDER BY status, size_order, placement) AS INTEGER) AS cohort
FROM described
