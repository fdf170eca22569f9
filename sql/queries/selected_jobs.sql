-- selected_jobs: the jobs a filtered report covers (gca report --since/--until/--vc/--user/--source).
-- A job is in when its queue start (eligible_at, else submit_at: where queue_delay_s counts
-- from, jobs.sql) falls in [$since, $until) and its VC, user and source are among those given.
-- Parameters: $since, $until (naive UTC timestamps, NULL: unbounded), $vcs, $users, $sources
-- (lists of names; an empty list: any).
-- Output: source, job_id.
-- Stage: selection
SELECT source, job_id
FROM jobs
WHERE ($since IS NULL OR coalesce(eligible_at, submit_at) >= $since)
  AND ($until IS NULL OR coalesce(eligible_at, submit_at) < $until)
  AND (len($vcs) = 0 OR list_contains($vcs, vc))
  AND (len($users) = 0 OR list_contains($users, user_name))
  AND (len($sources) = 0 OR list_contains($sources, source))
