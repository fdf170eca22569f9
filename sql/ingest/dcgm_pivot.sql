-- DCGM series values -> stage_raw (one row per GPU or MIG instance per sample time) and Xid events.
-- Shared by dcgm_prom (Prometheus text scrapes) and dcgm_query_range (Prometheus API exports).
-- Input: stage_dcgm(line, text, host, gpu_text, instance_text, uuid, pci_text, model, measure,
-- pod, namespace, container, hpc_job, value_text, utc_at, problem): one row per series value;
-- measure is what the metric measures (util, mem_util, mem_used, mem_free, mem_reserved,
-- mem_total, power, temp, sm_clock, gr_engine, throttle, xid, and the profiling fields
-- sm_active, sm_occupancy, tensor_active, fp64_active, fp32_active, fp16_active, dram_active,
-- pcie_tx_bytes, pcie_rx_bytes, nvlink_tx_bytes, nvlink_rx_bytes); problem: a line the reader
-- could not parse (kept as its own reject).
-- Parameters: the sanity bounds $window_start, $window_end, $outside_years, $max_gpus_per_node,
-- $gpu_bound (gpucluster_analysis/bounds.py): an Xid value at a time outside the years gca reads,
-- or of a GPU index at or past the bound, is rejected here; the other measures' rows are held
-- to them by nvsmi_check.sql. Needs the macros of nvsmi_macros.sql. A MIG instance (GPU_I_ID) is its own row, never merged
-- into its parent's; DCGM_FI_PROF_GR_ENGINE_ACTIVE (0-1) stays apart from DCGM_FI_DEV_GPU_UTIL (0-100).

CREATE OR REPLACE TEMP TABLE stage_keyed AS
WITH good AS (
    -- Prometheus NaN is "no value", as nvidia-smi's N/A
    SELECT *, CASE WHEN lower(trim(value_text)) = 'nan' THEN 'N/A' ELSE value_text END AS v
    FROM stage_dcgm WHERE problem IS NULL AND measure <> 'xid'
)
SELECT min(line) AS line, host, gpu_text, instance_text, utc_at,
       -- a measure twice, or two UUIDs: maybe a conflict (checked below, for these rows only)
       count(*) > count(DISTINCT measure) OR count(DISTINCT uuid) > 1 AS suspect,
       any_value(uuid) AS uuid, any_value(pci_text) AS pci_text, any_value(model) AS model,
       any_value(v) FILTER (WHERE measure = 'util') AS util_text,
       any_value(v) FILTER (WHERE measure = 'mem_util') AS mem_util_text,
       any_value(v) FILTER (WHERE measure = 'mem_used') AS mem_used_text,
       any_value(v) FILTER (WHERE measure = 'mem_free') AS mem_free_text,
       any_value(v) FILTER (WHERE measure = 'mem_reserved') AS mem_reserved_text,
       any_value(v) FILTER (WHERE measure = 'mem_total') AS mem_total_text,
       any_value(v) FILTER (WHERE measure = 'power') AS power_text,
       any_value(v) FILTER (WHERE measure = 'temp') AS temp_text,
       any_value(v) FILTER (WHERE measure = 'sm_clock') AS sm_clock_text,
       any_value(v) FILTER (WHERE measure = 'gr_engine') AS gr_engine_text,
       any_value(v) FILTER (WHERE measure = 'throttle') AS throttle_mask_text,
       any_value(v) FILTER (WHERE measure = 'sm_active') AS sm_active_text,
       any_value(v) FILTER (WHERE measure = 'sm_occupancy') AS sm_occupancy_text,
       any_value(v) FILTER (WHERE measure = 'tensor_active') AS tensor_active_text,
       any_value(v) FILTER (WHERE measure = 'fp64_active') AS fp64_active_text,
       any_value(v) FILTER (WHERE measure = 'fp32_active') AS fp32_active_text,
       any_value(v) FILTER (WHERE measure = 'fp16_active') AS fp16_active_text,
       any_value(v) FILTER (WHERE measure = 'dram_active') AS dram_active_text,
       any_value(v) FILTER (WHERE measure = 'pcie_tx_bytes') AS pcie_tx_text,
       any_value(v) FILTER (WHERE measure = 'pcie_rx_bytes') AS pcie_rx_text,
       any_value(v) FILTER (WHERE measure = 'nvlink_tx_bytes') AS nvlink_tx_text,
       any_value(v) FILTER (WHERE measure = 'nvlink_rx_bytes') AS nvlink_rx_text
FROM good
GROUP BY host, gpu_text, instance_text, utc_at;

CREATE OR REPLACE TEMP TABLE stage_raw AS
WITH good AS (
    SELECT d.*, CASE WHEN lower(trim(d.value_text)) = 'nan' THEN 'N/A' ELSE d.value_text END AS v
    FROM stage_dcgm d
    SEMI JOIN (SELECT host, gpu_text, instance_text, utc_at FROM stage_keyed WHERE suspect) s
        ON s.host IS NOT DISTINCT FROM d.host AND s.gpu_text IS NOT DISTINCT FROM d.gpu_text
       AND s.instance_text IS NOT DISTINCT FROM d.instance_text AND s.utc_at = d.utc_at
    WHERE d.problem IS NULL AND d.measure <> 'xid'
),
-- Two values of one measure for one GPU at one time (a series scraped twice, two exporters
-- naming the same host, two GPUs claiming one index): which is right cannot be told, so
-- the row is rejected. Equal values (one GPU shared by several pods) are one value.
conflicts AS (
    SELECT host, gpu_text, instance_text, utc_at, string_agg(what, '; ' ORDER BY what) AS conflict
    FROM (
        SELECT host, gpu_text, instance_text, utc_at,
               measure || ': ' || string_agg(DISTINCT v, ' and ' ORDER BY v) AS what
        FROM good GROUP BY host, gpu_text, instance_text, utc_at, measure HAVING count(DISTINCT v) > 1
        UNION ALL
        SELECT host, gpu_text, instance_text, utc_at,
               'UUID: ' || string_agg(DISTINCT uuid, ' and ' ORDER BY uuid)
        FROM good GROUP BY host, gpu_text, instance_text, utc_at HAVING count(DISTINCT uuid) > 1
    )
    GROUP BY host, gpu_text, instance_text, utc_at
),
keyed AS (SELECT * FROM stage_keyed)
SELECT k.line,
       concat_ws(' ', k.host, 'gpu ' || k.gpu_text, 'GPU_I_ID ' || k.instance_text, strftime(k.utc_at, '%Y-%m-%dT%H:%M:%SZ')) AS text,
       k.host AS machine_id, CAST(NULL AS TIMESTAMP) AS local_at, k.utc_at, CAST(NULL AS VARCHAR) AS time_text,
       k.gpu_text AS index_text, k.instance_text, uuid, pci_text, model, util_text, mem_util_text, mem_used_text,
       -- total: DCGM's own, else used + free + reserved; used + free alone misses the driver's reservation
       coalesce(mem_total_text, CAST(gpu_number(mem_used_text, []) + gpu_number(mem_free_text, []) + gpu_number(mem_reserved_text, []) AS VARCHAR))
           AS mem_total_text,
       power_text, temp_text, sm_clock_text, gr_engine_text, throttle_mask_text,
       CAST(NULL AS VARCHAR) AS throttle_text,
       sm_active_text, sm_occupancy_text, tensor_active_text, fp64_active_text, fp32_active_text, fp16_active_text,
       dram_active_text, pcie_tx_text, pcie_rx_text, nvlink_tx_text, nvlink_rx_text,
       'several values at one time (duplicate series?) for ' || c.conflict AS problem
FROM keyed k LEFT JOIN conflicts c
    ON c.host IS NOT DISTINCT FROM k.host AND c.gpu_text IS NOT DISTINCT FROM k.gpu_text
   AND c.instance_text IS NOT DISTINCT FROM k.instance_text AND c.utc_at = k.utc_at
UNION ALL
SELECT line, text, host, NULL, utc_at, NULL, gpu_text, instance_text, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, problem
FROM stage_dcgm WHERE problem IS NOT NULL
UNION ALL
-- an Xid value no event can be made of (the pivot leaves Xid series out): outside the years,
-- or of a GPU index past the bound of GPUs per node
SELECT line, text, host, NULL, utc_at, NULL, gpu_text, instance_text, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       CASE WHEN NOT (utc_at >= $window_start AND utc_at < $window_end)
                THEN 'Xid at ' || strftime(utc_at, '%Y-%m-%dT%H:%M:%S') || ' UTC' || $outside_years
            ELSE 'Xid of GPU index ' || trim(gpu_text) || $gpu_bound END
FROM stage_dcgm
WHERE problem IS NULL AND measure = 'xid'
  AND (NOT (utc_at >= $window_start AND utc_at < $window_end) OR TRY_CAST(trim(gpu_text) AS HUGEINT) >= $max_gpus_per_node);

DROP TABLE stage_keyed;

-- DCGM_FI_DEV_XID_ERRORS holds the last Xid a GPU raised, repeated in every scrape: an
-- event where a series first shows a non-zero value or the value changes. A scrape without
-- a value (NaN) changes nothing: the Xid before and after it is the same error.
CREATE OR REPLACE TEMP TABLE stage_gpu_events AS
SELECT line, utc_at AS event_at, host AS machine_id, TRY_CAST(gpu_text AS SMALLINT) AS gpu_index, 'xid' AS kind,
       'Xid ' || CAST(CAST(x AS BIGINT) AS VARCHAR) || coalesce(' (GPU instance ' || instance_text || ')', '') AS detail
FROM (
    SELECT *, lag(x) OVER (PARTITION BY host, gpu_text, instance_text ORDER BY utc_at, line) AS previous
    FROM (SELECT *, TRY_CAST(value_text AS DOUBLE) AS x FROM stage_dcgm
          WHERE problem IS NULL AND measure = 'xid'
            -- those past the bounds are rejects (above)
            AND utc_at >= $window_start AND utc_at < $window_end
            AND coalesce(TRY_CAST(trim(gpu_text) AS HUGEINT) < $max_gpus_per_node, true))
    WHERE isfinite(x)
)
WHERE x <> 0 AND x IS DISTINCT FROM previous;

-- Which workload each GPU served, as the series' labels say: one row per GPU (or MIG
-- instance) and label set, with its first and last sample. A `pod` that is dcgm-exporter's
-- own (Prometheus put the exporter pod's labels on a GPU no pod held) names no workload.
CREATE OR REPLACE TEMP TABLE stage_workload_labels AS
SELECT host AS machine_id, TRY_CAST(gpu_text AS SMALLINT) AS gpu_index, TRY_CAST(instance_text AS SMALLINT) AS gpu_instance_id,
       min(utc_at) AS first_at, max(utc_at) AS last_at, pod, namespace, container, hpc_job
FROM (
    SELECT host, gpu_text, instance_text, utc_at, hpc_job,
           CASE WHEN NOT exporter THEN nullif(pod, '') END AS pod,
           CASE WHEN NOT exporter THEN nullif(namespace, '') END AS namespace,
           CASE WHEN NOT exporter THEN nullif(container, '') END AS container
    FROM (SELECT *, coalesce(contains(lower(pod), 'dcgm-exporter'), false) AS exporter FROM stage_dcgm
          WHERE problem IS NULL AND (pod IS NOT NULL OR hpc_job IS NOT NULL))
)
WHERE (pod IS NOT NULL OR nullif(hpc_job, '') IS NOT NULL) AND utc_at IS NOT NULL AND host IS NOT NULL
  -- the samples of a GPU past the bound, or outside the years gca reads, are rejected: they name no workload
  AND utc_at >= $window_start AND utc_at < $window_end
  AND coalesce(TRY_CAST(trim(gpu_text) AS HUGEINT) < $max_gpus_per_node, true)
GROUP BY ALL;
