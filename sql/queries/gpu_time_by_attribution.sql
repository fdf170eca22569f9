-- gpu_time_by_attribution: how much GPU time had its samples found which way (temp table
-- attempt_attribution; modes in sql/queries/attempt_attribution.sql), so the report can say
-- how far its utilization numbers rest on node-level guesses.
-- Parameters: none.
-- Output: attribution, attempts, gpu_time_s (sum of (end - start) x the attempt's GPUs),
-- gpu_time_share_pct (of all timed attempts' GPU time), ordered from most to least precise.
WITH modes AS (
    SELECT DISTINCT source, job_id, attempt_no, attribution FROM attempt_attribution
),
sized AS (
    SELECT source, job_id, attempt_no, count(*) AS gpus FROM allocations GROUP BY ALL
),
timed AS (
    SELECT m.attribution,
           (epoch(a.end_at) - epoch(a.start_at)) * coalesce(CAST(s.gpus AS DOUBLE), a.num_gpus, 0) AS gpu_time_s
    FROM modes m
    JOIN attempts a USING (source, job_id, attempt_no)
    LEFT JOIN sized s USING (source, job_id, attempt_no)
)
SELECT attribution,
       count(*) AS attempts,
       sum(gpu_time_s) AS gpu_time_s,
       100 * sum(gpu_time_s) / nullif(sum(sum(gpu_time_s)) OVER (), 0) AS gpu_time_share_pct
FROM timed
GROUP BY attribution
ORDER BY CASE attribution WHEN 'scheduler' THEN 1 WHEN 'scontrol' THEN 2 WHEN 'cuda_visible_devices' THEN 3
         WHEN 'whole_node' THEN 4 WHEN 'node_level' THEN 5 ELSE 6 END
