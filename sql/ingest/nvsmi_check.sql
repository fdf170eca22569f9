-- Check what a GPU telemetry reader staged as text: shared by nvidia-smi (CSV, dmon, XML) and
-- DCGM. Makes stage_gpu (typed rows, each with its problem or none), which nvsmi_store.sql stores.
-- Parameters: $zone (zone of local_at; zone_periods must hold it), $pci_order
-- (number GPUs that have no index by PCI bus order within the file), and the sanity bounds
-- $window_start, $window_end, $outside_years, $max_gpus_per_node, $gpu_bound
-- (gpucluster_analysis/bounds.py: a zone-less time is held to the years as written, another
-- in UTC; a GPU index is below the bound of GPUs per node), and each bounded measure's
-- $<measure>_min, $<measure>_max, $<measure>_range (bounds.MEASURE_RANGES).
-- Input, made by the format's reader (one row per GPU, or MIG instance, per sample):
--   stage_raw(line, text, machine_id, local_at, utc_at, time_text, index_text, instance_text,
--             uuid, pci_text, model, util_text, mem_util_text, mem_used_text, mem_total_text,
--             power_text, temp_text, sm_clock_text, gr_engine_text, throttle_mask_text,
--             throttle_text, problem, and DCGM's profiling fields sm_active_text,
--             sm_occupancy_text, tensor_active_text, fp64_active_text, fp32_active_text,
--             fp16_active_text, dram_active_text, pcie_tx_text, pcie_rx_text, nvlink_tx_text,
--             nvlink_rx_text, which store_staged adds empty for readers without them)
--   values as the tool printed them; problem: the reader's own reason to reject the row.
-- A row is stored whole or rejected whole, with its line: a value that is neither missing
-- nor a number in a unit that needs no conversion, or out of its range, rejects the row.

CREATE OR REPLACE TEMP TABLE stage_gpu AS
WITH periods AS (
    SELECT local_start, offset_s,
           lead(local_start) OVER (ORDER BY local_start) AS next_start,
           lead(offset_s) OVER (ORDER BY local_start) AS next_offset
    FROM zone_periods WHERE zone = $zone
),
-- The offset of each local minute in the log, not of each row: zones change on whole minutes,
-- and an ASOF join of every row would sort the whole staging table (a big log's peak memory).
minutes AS (
    SELECT m.minute, z.offset_s, z.next_offset, z.next_start AS fold_at,
           -- the hour clocks skip when they go forward (summer time): a tool reading the clock never
           -- prints it, so the zone is not the one the log was written in
           coalesce(z.next_offset > z.offset_s AND m.minute >= z.next_start - to_seconds(z.next_offset - z.offset_s), false)
               AS skipped,
           -- the hour clocks repeat when they go back: first pass unless the log says otherwise
           coalesce(z.next_offset < z.offset_s AND m.minute >= z.next_start - to_seconds(z.offset_s - z.next_offset), false)
               AS repeated
    FROM (SELECT DISTINCT date_trunc('minute', local_at) AS minute FROM stage_raw
          WHERE utc_at IS NULL AND local_at IS NOT NULL) m
    ASOF LEFT JOIN periods z ON m.minute >= z.local_start
),
fold_rows AS (
    -- rows in a repeated hour (few), with the latest time printed on a line before each
    SELECT r.line, r.local_at, m.fold_at,
           max(r.local_at) OVER (PARTITION BY m.fold_at ORDER BY r.line ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
               AS latest_before
    FROM stage_raw r JOIN minutes m ON m.minute = date_trunc('minute', r.local_at) AND m.repeated AND r.utc_at IS NULL
),
second_passes AS (
    -- where the log's clock went back by more than half an hour inside the repeated hour:
    -- that line and those after it are the hour's second pass
    SELECT fold_at, min(line) AS from_line FROM fold_rows
    WHERE latest_before > local_at + INTERVAL 30 MINUTE GROUP BY fold_at
),
timed AS (
    SELECT r.*,
           coalesce(r.utc_at, r.local_at - to_seconds(CASE WHEN r.line >= s.from_line THEN m.next_offset ELSE m.offset_s END))
               AS sample_at,
           coalesce(m.skipped, false) AS skipped_time
    FROM stage_raw r LEFT JOIN minutes m ON m.minute = date_trunc('minute', r.local_at) AND r.utc_at IS NULL
    LEFT JOIN second_passes s ON s.fold_at = m.fold_at AND m.repeated
),
numbers AS (
    -- each value parsed once; the checks below reuse the results
    SELECT *,
           gpu_number(util_text, ['%']) AS util_pct, gpu_number(mem_util_text, ['%']) AS mem_util_pct,
           gpu_number(mem_used_text, ['MiB', 'MB']) AS mem_used_mib, gpu_number(mem_total_text, ['MiB', 'MB']) AS mem_total_mib,
           gpu_number(power_text, ['W']) AS power_w, gpu_number(temp_text, ['C']) AS temp_c,
           gpu_number(sm_clock_text, ['MHz']) AS sm_clock_mhz, gpu_number(gr_engine_text, []) AS gr_engine_active,
           gpu_mask(throttle_mask_text) AS throttle_mask,
           -- DCGM's profiling fields, parsed only where a row has any (nvidia-smi's never do)
           coalesce(sm_active_text, sm_occupancy_text, tensor_active_text, fp64_active_text, fp32_active_text,
                    fp16_active_text, dram_active_text, pcie_tx_text, pcie_rx_text, nvlink_tx_text, nvlink_rx_text)
               IS NOT NULL AS profile_text,
           CASE WHEN profile_text THEN gpu_number(sm_active_text, []) END AS sm_active,
           CASE WHEN profile_text THEN gpu_number(sm_occupancy_text, []) END AS sm_occupancy,
           CASE WHEN profile_text THEN gpu_number(tensor_active_text, []) END AS tensor_active,
           CASE WHEN profile_text THEN gpu_number(fp64_active_text, []) END AS fp64_active,
           CASE WHEN profile_text THEN gpu_number(fp32_active_text, []) END AS fp32_active,
           CASE WHEN profile_text THEN gpu_number(fp16_active_text, []) END AS fp16_active,
           CASE WHEN profile_text THEN gpu_number(dram_active_text, []) END AS dram_active,
           CASE WHEN profile_text THEN gpu_number(pcie_tx_text, []) END AS pcie_tx_bytes,
           CASE WHEN profile_text THEN gpu_number(pcie_rx_text, []) END AS pcie_rx_bytes,
           CASE WHEN profile_text THEN gpu_number(nvlink_tx_text, []) END AS nvlink_tx_bytes,
           CASE WHEN profile_text THEN gpu_number(nvlink_rx_text, []) END AS nvlink_rx_bytes,
           TRY_CAST(trim(index_text) AS SMALLINT) AS gpu_index,
           TRY_CAST(trim(instance_text) AS SMALLINT) AS gpu_instance_id
    FROM timed
),
typed AS (
    SELECT line, text, nullif(trim(machine_id), '') AS machine_id, sample_at,
           gpu_index, gpu_instance_id,
           CASE WHEN gpu_missing(uuid) THEN NULL ELSE trim(uuid) END AS uuid,
           gpu_pci(pci_text) AS pci_bus_id,
           CASE WHEN gpu_missing(model) THEN NULL ELSE trim(model) END AS model,
           util_pct, mem_util_pct, mem_used_mib, mem_total_mib, power_w, temp_c, sm_clock_mhz, gr_engine_active,
           sm_active, sm_occupancy, tensor_active, fp64_active, fp32_active, fp16_active, dram_active,
           pcie_tx_bytes, pcie_rx_bytes, nvlink_tx_bytes, nvlink_rx_bytes,
           coalesce(throttle_text, gpu_throttle_names(throttle_mask)) AS throttle_reasons,
           coalesce(sm_active, sm_occupancy, tensor_active, fp64_active, fp32_active, fp16_active, dram_active,
                    pcie_tx_bytes, pcie_rx_bytes, nvlink_tx_bytes, nvlink_rx_bytes) IS NOT NULL AS has_profile,
           -- a row of profiling fields only (NaN ones too: profiling paused), no utilization field
           util_text IS NULL AND profile_text AS profile_only,
           -- NVML's answer for a GPU that fell off the bus (Xid 79): its values are missing, and
           -- the loss itself is an event
           CASE WHEN contains(text, '[GPU is lost]') THEN '[GPU is lost]'
                WHEN contains(text, '[GPU requires reset]') THEN '[GPU requires reset]' END AS gpu_lost,
           -- DCGM's profiling fields: activities are ratios, traffic bytes per second; the ranges
           -- are bounds.MEASURE_RANGES' ($<measure>_min, _max, _range)
           CASE WHEN profile_text THEN CASE
                   WHEN NOT isfinite(coalesce(sm_active, 0)) OR sm_active IS NULL AND NOT gpu_missing(sm_active_text)
                       THEN 'unreadable SM activity ' || sm_active_text
                   WHEN NOT isfinite(coalesce(sm_occupancy, 0)) OR sm_occupancy IS NULL AND NOT gpu_missing(sm_occupancy_text)
                       THEN 'unreadable SM occupancy ' || sm_occupancy_text
                   WHEN NOT isfinite(coalesce(tensor_active, 0)) OR tensor_active IS NULL AND NOT gpu_missing(tensor_active_text)
                       THEN 'unreadable tensor pipe activity ' || tensor_active_text
                   WHEN NOT isfinite(coalesce(fp64_active, 0)) OR fp64_active IS NULL AND NOT gpu_missing(fp64_active_text)
                       THEN 'unreadable FP64 pipe activity ' || fp64_active_text
                   WHEN NOT isfinite(coalesce(fp32_active, 0)) OR fp32_active IS NULL AND NOT gpu_missing(fp32_active_text)
                       THEN 'unreadable FP32 pipe activity ' || fp32_active_text
                   WHEN NOT isfinite(coalesce(fp16_active, 0)) OR fp16_active IS NULL AND NOT gpu_missing(fp16_active_text)
                       THEN 'unreadable FP16 pipe activity ' || fp16_active_text
                   WHEN NOT isfinite(coalesce(dram_active, 0)) OR dram_active IS NULL AND NOT gpu_missing(dram_active_text)
                       THEN 'unreadable DRAM activity ' || dram_active_text
                   WHEN NOT isfinite(coalesce(pcie_tx_bytes, 0)) OR pcie_tx_bytes IS NULL AND NOT gpu_missing(pcie_tx_text)
                       THEN 'unreadable PCIe TX bytes ' || pcie_tx_text
                   WHEN NOT isfinite(coalesce(pcie_rx_bytes, 0)) OR pcie_rx_bytes IS NULL AND NOT gpu_missing(pcie_rx_text)
                       THEN 'unreadable PCIe RX bytes ' || pcie_rx_text
                   WHEN NOT isfinite(coalesce(nvlink_tx_bytes, 0)) OR nvlink_tx_bytes IS NULL AND NOT gpu_missing(nvlink_tx_text)
                       THEN 'unreadable NVLink TX bytes ' || nvlink_tx_text
                   WHEN NOT isfinite(coalesce(nvlink_rx_bytes, 0)) OR nvlink_rx_bytes IS NULL AND NOT gpu_missing(nvlink_rx_text)
                       THEN 'unreadable NVLink RX bytes ' || nvlink_rx_text
                   WHEN NOT sm_active BETWEEN $sm_active_min AND $sm_active_max THEN 'SM activity outside ' || $sm_active_range || ': ' || sm_active_text
                   WHEN NOT sm_occupancy BETWEEN $sm_occupancy_min AND $sm_occupancy_max THEN 'SM occupancy outside ' || $sm_occupancy_range || ': ' || sm_occupancy_text
                   WHEN NOT tensor_active BETWEEN $tensor_active_min AND $tensor_active_max THEN 'tensor pipe activity outside ' || $tensor_active_range || ': ' || tensor_active_text
                   WHEN NOT fp64_active BETWEEN $fp64_active_min AND $fp64_active_max THEN 'FP64 pipe activity outside ' || $fp64_active_range || ': ' || fp64_active_text
                   WHEN NOT fp32_active BETWEEN $fp32_active_min AND $fp32_active_max THEN 'FP32 pipe activity outside ' || $fp32_active_range || ': ' || fp32_active_text
                   WHEN NOT fp16_active BETWEEN $fp16_active_min AND $fp16_active_max THEN 'FP16 pipe activity outside ' || $fp16_active_range || ': ' || fp16_active_text
                   WHEN NOT dram_active BETWEEN $dram_active_min AND $dram_active_max THEN 'DRAM activity outside ' || $dram_active_range || ': ' || dram_active_text
                   WHEN least(pcie_tx_bytes, pcie_rx_bytes, nvlink_tx_bytes, nvlink_rx_bytes) < 0 THEN 'negative PCIe or NVLink traffic'
           END END AS profile_problem,
           CASE
               WHEN problem IS NOT NULL THEN problem
               WHEN nullif(trim(machine_id), '') IS NULL THEN 'no host for this row'
               WHEN sample_at IS NULL AND time_text IS NULL THEN 'row without a time'
               WHEN sample_at IS NULL THEN 'unreadable time ' || time_text
               WHEN skipped_time THEN 'time ' || time_text || ' does not exist in ' || $zone
                   || ' (clocks skip it when they go forward): is --tz the zone the log was written in?'
               WHEN NOT (coalesce(local_at, sample_at) >= $window_start AND coalesce(local_at, sample_at) < $window_end)
                   THEN 'time ' || coalesce(time_text, strftime(sample_at, '%Y-%m-%dT%H:%M:%S') || ' UTC') || $outside_years
               WHEN gpu_index IS NULL AND NOT gpu_missing(index_text)
                   THEN CASE WHEN TRY_CAST(trim(index_text) AS HUGEINT) >= $max_gpus_per_node
                             THEN 'GPU index ' || trim(index_text) || $gpu_bound
                             ELSE 'unreadable GPU index ' || index_text END
               WHEN gpu_index < 0 THEN 'unreadable GPU index ' || index_text
               WHEN gpu_index >= $max_gpus_per_node THEN 'GPU index ' || gpu_index || $gpu_bound
               WHEN gpu_instance_id IS NULL AND NOT gpu_missing(instance_text)
                   THEN 'unreadable GPU instance id ' || instance_text
               WHEN NOT isfinite(coalesce(util_pct, 0)) OR util_pct IS NULL AND NOT gpu_missing(util_text)
                   THEN 'unreadable GPU utilization ' || util_text
               WHEN NOT isfinite(coalesce(mem_util_pct, 0)) OR mem_util_pct IS NULL AND NOT gpu_missing(mem_util_text)
                   THEN 'unreadable memory utilization ' || mem_util_text
               WHEN NOT isfinite(coalesce(mem_used_mib, 0)) OR mem_used_mib IS NULL AND NOT gpu_missing(mem_used_text)
                   THEN 'unreadable memory used ' || mem_used_text
               WHEN NOT isfinite(coalesce(mem_total_mib, 0)) OR mem_total_mib IS NULL AND NOT gpu_missing(mem_total_text)
                   THEN 'unreadable memory total ' || mem_total_text
               WHEN NOT isfinite(coalesce(power_w, 0)) OR power_w IS NULL AND NOT gpu_missing(power_text)
                   THEN 'unreadable power ' || power_text
               WHEN NOT isfinite(coalesce(temp_c, 0)) OR temp_c IS NULL AND NOT gpu_missing(temp_text)
                   THEN 'unreadable temperature ' || temp_text
               WHEN NOT isfinite(coalesce(sm_clock_mhz, 0)) OR sm_clock_mhz IS NULL AND NOT gpu_missing(sm_clock_text)
                   THEN 'unreadable SM clock ' || sm_clock_text
               WHEN NOT isfinite(coalesce(gr_engine_active, 0)) OR gr_engine_active IS NULL AND NOT gpu_missing(gr_engine_text)
                   THEN 'unreadable graphics engine activity ' || gr_engine_text
               WHEN throttle_mask IS NULL AND NOT gpu_missing(throttle_mask_text)
                   THEN 'unreadable clock throttle reasons ' || throttle_mask_text
               WHEN NOT util_pct BETWEEN $util_min AND $util_max THEN 'GPU utilization outside ' || $util_range || ': ' || util_text
               WHEN NOT mem_util_pct BETWEEN $mem_util_min AND $mem_util_max
                   THEN 'memory utilization outside ' || $mem_util_range || ': ' || mem_util_text
               WHEN NOT gr_engine_active BETWEEN $gr_engine_min AND $gr_engine_max
                   THEN 'graphics engine activity outside ' || $gr_engine_range || ': ' || gr_engine_text
               WHEN least(mem_used_mib, mem_total_mib, power_w, sm_clock_mhz) < 0 THEN 'negative memory, power or clock'
               WHEN profile_problem IS NOT NULL THEN profile_problem
           END AS problem
    FROM numbers
)
-- the line's text is kept only where it is needed: for the rejects (a row without an index
-- may become one below)
SELECT * EXCLUDE (text), CASE WHEN problem IS NOT NULL OR gpu_index IS NULL THEN text END AS text FROM typed;

-- Typed rows replace the raw text: free its memory (a day of 1 s samples is millions of rows).
DROP TABLE stage_raw;

-- GPUs named only by UUID or PCI bus id: the index an earlier file gave them on this host.
UPDATE stage_gpu s SET gpu_index = d.gpu_index
FROM (SELECT machine_id, uuid, arg_max(gpu_index, file_id) AS gpu_index
      FROM gpu_devices WHERE uuid IS NOT NULL GROUP BY machine_id, uuid) d
WHERE s.gpu_index IS NULL AND s.problem IS NULL AND s.machine_id = d.machine_id AND s.uuid = d.uuid;

UPDATE stage_gpu s SET gpu_index = d.gpu_index
FROM (SELECT machine_id, pci_bus_id, arg_max(gpu_index, file_id) AS gpu_index
      FROM gpu_devices WHERE pci_bus_id IS NOT NULL GROUP BY machine_id, pci_bus_id) d
WHERE s.gpu_index IS NULL AND s.problem IS NULL AND s.machine_id = d.machine_id AND s.pci_bus_id = d.pci_bus_id;

-- Else nvidia-smi's own numbering: GPUs in PCI bus order (only when the file has no index at all).
UPDATE stage_gpu s SET gpu_index = o.gpu_index
FROM (SELECT machine_id, pci_bus_id, CAST(dense_rank() OVER (PARTITION BY machine_id ORDER BY pci_bus_id) - 1 AS SMALLINT) AS gpu_index
      FROM (SELECT DISTINCT machine_id, pci_bus_id FROM stage_gpu WHERE pci_bus_id IS NOT NULL)) o
WHERE $pci_order AND s.gpu_index IS NULL AND s.problem IS NULL
  AND s.machine_id = o.machine_id AND s.pci_bus_id = o.pci_bus_id;

UPDATE stage_gpu SET problem = CASE
        WHEN uuid IS NOT NULL OR pci_bus_id IS NOT NULL
            THEN 'GPU ' || coalesce(uuid, pci_bus_id) || ' has no index in this file: first ingest one that pairs it with its index'
                 || ' (e.g. nvidia-smi --query-gpu=index,uuid,pci.bus_id --format=csv)'
        ELSE 'row without a GPU index' END
WHERE problem IS NULL AND gpu_index IS NULL;
