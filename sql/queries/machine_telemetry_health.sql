-- machine_telemetry_health: per machine, what its GPU telemetry says about slowness causes:
-- the share of detail samples with a throttle reason that slows a working GPU, mean SM
-- clock and mean temperature (gpu_sample_details, whole GPUs), to set beside the machines
-- the speed analysis finds slow. Samples of the report's period (temp view
-- period_gpu_sample_details: analyze/selection.py).
-- Parameters: none.
-- Output: machine_id, detail_samples, throttled_pct, mean_sm_clock_mhz, mean_temp_c.
-- Stage: input, heavy
SELECT machine_id,
       count(*) AS detail_samples,
       -- a reason that slows a working GPU: power cap, slowdowns, power brake (not idle or app clocks)
       100.0 * count(*) FILTER (WHERE regexp_matches(throttle_reasons, 'power_cap|slowdown|power_brake'))
           / nullif(count(throttle_reasons), 0) AS throttled_pct,
       avg(sm_clock_mhz) AS mean_sm_clock_mhz,
       avg(temp_c) AS mean_temp_c
FROM period_gpu_sample_details
WHERE gpu_instance_id IS NULL
GROUP BY machine_id
ORDER BY machine_id
