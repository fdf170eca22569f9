-- Read a Prometheus HTTP API response (query_range "matrix" or query "vector") of DCGM metrics
-- into stage_dcgm (see dcgm_pivot.sql). Parameters: $path, $metric_names (lower-case metric
-- names gca reads), $measures (what each measures, same order), $fallback_metric (the
-- measure the file name gives, for series without __name__).
-- Times are epoch seconds, UTC. JSON has no lines gca could point at: rejects carry the series.

CREATE OR REPLACE TEMP MACRO dcgm_label(m, k) AS (
    list_extract(list_transform(list_filter(map_entries(m), lambda e: lower(e.key) = k), lambda e: e.value), 1)
);

CREATE OR REPLACE TEMP TABLE stage_dcgm_series AS
SELECT series_no, r.metric AS m, coalesce(r."values", [r."value"]) AS points,
       coalesce($measures[list_position($metric_names, lower(dcgm_label(r.metric, '__name__')))],
                CASE WHEN dcgm_label(r.metric, '__name__') IS NULL THEN $fallback_metric END) AS measure
FROM (
    SELECT unnest(result) AS r, unnest(generate_series(1, len(result))) AS series_no
    FROM stage_query_response
);

-- The labels are read once per series (a series has thousands of points).
CREATE OR REPLACE TEMP TABLE stage_dcgm_series_labels AS
SELECT series_no, measure, points,
       left(CAST(m AS VARCHAR), 300) AS text,
       coalesce(dcgm_label(m, 'kubernetes_node'), dcgm_label(m, 'hostname'),
                regexp_replace(dcgm_label(m, 'instance'), ':[0-9]+$', '')) AS host,
       dcgm_label(m, 'gpu') AS gpu_text,
       nullif(dcgm_label(m, 'gpu_i_id'), '') AS instance_text,
       dcgm_label(m, 'uuid') AS uuid,
       dcgm_label(m, 'pci_bus_id') AS pci_text,
       dcgm_label(m, 'modelname') AS model,
       -- the workload on the GPU (dcgm.py's LABELS: the first of each list present)
       coalesce(dcgm_label(m, 'exported_pod'), dcgm_label(m, 'pod'), dcgm_label(m, 'pod_name')) AS pod,
       coalesce(dcgm_label(m, 'exported_namespace'), dcgm_label(m, 'namespace'), dcgm_label(m, 'pod_namespace')) AS namespace,
       coalesce(dcgm_label(m, 'exported_container'), dcgm_label(m, 'container'), dcgm_label(m, 'container_name')) AS container,
       dcgm_label(m, 'hpc_job') AS hpc_job
FROM stage_dcgm_series WHERE measure IS NOT NULL;

CREATE OR REPLACE TEMP TABLE stage_dcgm AS
SELECT CAST(NULL AS BIGINT) AS line, text, host, gpu_text, instance_text, uuid, pci_text, model, pod, namespace, container,
       hpc_job, measure,
       json_extract_string(p, '$[1]') AS value_text,
       make_timestamp(TRY_CAST(round(TRY_CAST(json_extract(p, '$[0]') AS DOUBLE) * 1000000) AS BIGINT)) AS utc_at,
       CASE WHEN json_type(p) <> 'ARRAY' OR json_array_length(p) <> 2
                THEN 'a point is [time, "value"], not ' || left(CAST(p AS VARCHAR), 100)
            WHEN TRY_CAST(round(TRY_CAST(json_extract(p, '$[0]') AS DOUBLE) * 1000000) AS BIGINT) IS NULL
            THEN 'unreadable sample time ' || coalesce(CAST(json_extract(p, '$[0]') AS VARCHAR), 'null') END AS problem
FROM (SELECT *, unnest(points) AS p FROM stage_dcgm_series_labels);
