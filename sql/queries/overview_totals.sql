-- overview_totals: one row of headline numbers for the Overview section.
-- Needs the temp tables job_facts and machine_capacity_snapshot (the view machine_capacity):
-- "listed" as the machine list says, "observed" as allocations and non-null GPU samples
-- show (highest GPU index + 1), gpus (capacity) the larger of the two. Samples are those of
-- the report's period, counted once in the temp table period_sample_totals.
-- Parameters: none.
-- Output: first_at, last_at (earliest submit/start, latest end/submit), jobs, users, vcs,
-- attempts, machines, machines_listed, machines_observed, gpus, gpus_listed, gpus_observed,
-- gpu_hours, gpu_samples, host_samples, gpu_samples_first_at, gpu_samples_last_at.
-- Stage: result
WITH j AS (
    SELECT least(min(submit_time), min(first_start_time)) AS first_at,
           greatest(max(end_time), max(submit_time)) AS last_at,
           count(*) AS jobs,
           count(DISTINCT "user") AS users,
           count(DISTINCT vc) AS vcs,
           sum(attempts) AS attempts,
           sum(gpu_time_s) / 3600.0 AS gpu_hours
    FROM job_facts
),
m AS (
    SELECT count(*) AS machines,
           count(listed_gpus) AS machines_listed,
           count(observed_gpus) AS machines_observed,
           sum(gpus) AS gpus,
           sum(listed_gpus) AS gpus_listed,
           sum(observed_gpus) AS gpus_observed
    FROM machine_capacity_snapshot
),
g AS (
    SELECT * FROM period_sample_totals
)
SELECT j.first_at, j.last_at, j.jobs, j.users, j.vcs, CAST(j.attempts AS BIGINT) AS attempts,
       m.machines, m.machines_listed, m.machines_observed,
       CAST(m.gpus AS BIGINT) AS gpus, CAST(m.gpus_listed AS BIGINT) AS gpus_listed,
       CAST(m.gpus_observed AS BIGINT) AS gpus_observed,
       j.gpu_hours, g.gpu_samples, g.host_samples,
       g.gpu_samples_first_at, g.gpu_samples_last_at
FROM j, m, g
