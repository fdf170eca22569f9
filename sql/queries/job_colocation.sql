-- job_colocation: whether a job shared a server with another job, i.e. another job's
-- window on the same machine overlapped one of its windows in time (temp table
-- job_machine_windows). Windows of one job on one machine are merged, so any overlap
-- on a machine is between two different jobs. Sorting the windows of each machine by
-- start, window i overlaps another one exactly when an earlier-sorted window ends after
-- i starts, or the next-sorted window starts before i ends: O(n log n), no self-join.
-- Only jobs of this store are seen: a neighbour outside the trace is invisible.
-- Parameters: none.
-- Output: source, job_id, shares_server (BOOLEAN), shared_machines (machines on which it overlapped).
-- Stage: selected
WITH ordered AS (
    SELECT source, job_id, machine_id, start_at, end_at,
           max(end_at) OVER (PARTITION BY machine_id ORDER BY start_at, end_at, source, job_id
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS earlier_end,
           lead(start_at) OVER (PARTITION BY machine_id ORDER BY start_at, end_at, source, job_id) AS next_start
    FROM job_machine_windows
),
-- per (job, machine) first, then per job: a count of distinct machines would take a third
-- aggregation and a join
flagged AS (
    SELECT source, job_id, machine_id,
           bool_or(coalesce(earlier_end > start_at, false) OR coalesce(next_start < end_at, false)) AS overlapping
    FROM ordered
    GROUP BY source, job_id, machine_id
)
SELECT source, job_id,
       bool_or(overlapping) AS shares_server,
       count(*) FILTER (WHERE overlapping) AS shared_machines
FROM flagged
GROUP BY source, job_id
