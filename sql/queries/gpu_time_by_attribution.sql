-- gpu_time_by_attribution: how much GPU time had its samples found which way (temp tables
-- attempt_attribution, whose header lists the modes, and attempt_sizes), so the report
-- can say how far its utilization numbers rest on node-level guesses.
-- Parameters: none.
-- Output: attribution, attempts, gpu_time_s (sum of (end - start) x the attempt's GPUs),
-- gpu_time_share_pct (of all timed attempts' GPU time), ordered from most to least precise.
-- Stage: result
WITH modes AS (
    SELECT DISTINCT source, job_id, attempt_no, attribution FROM attempt_attribution
),
timed AS (
    SELECT m.attribution, (epoch(a.end_at) - epoch(a.start_at)) * coalesce(a.gpus, 0) AS gpu_time_s
    FROM modes m
    JOIN attempt_sizes a USING (source, job_id, attempt_no)
)
SELECT attribution,
       count(*) AS attempts,
       sum(gpu_time_s) AS gpu_time_s,
       100 * sum(gpu_time_s) / nullif(sum(sum(gpu_time_s)) OVER (), 0) AS gpu_time_share_pct
FROM timed
GROUP BY attribution
ORDER BY CASE attribution WHEN 'scheduler' THEN 1 WHEN 'scontrol' THEN 2 WHEN 'cuda_visible_devices' THEN 3
         WHEN 'whole_node' THEN 4 WHEN 'node_level' THEN 5 ELSE 6 END
