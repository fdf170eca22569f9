-- Store what nvsmi_check.sql checked, and the rows a reader typed itself. Parameters: $file_id.
-- Input: stage_gpu (nvsmi_check.sql; empty when every row took the reader's fast way),
--   stage_fast(line, machine_id, sample_at, gpu_index, uuid, pci_bus_id, model, util_pct,
--   mem_util_pct, mem_used_mib, mem_total_mib, power_w, temp_c, sm_clock_mhz): rows the
--   reader typed, checked and timed itself (ingest/gpu/nvsmi_fast.py), stored as they are.
--   stage_gpu_events(line, event_at, machine_id, gpu_index, kind, detail): tool errors.

INSERT INTO rejects (file_id, line, reason, text)
SELECT $file_id, line, problem, left(text, 500) FROM stage_gpu WHERE problem IS NOT NULL;

-- A DCGM scrape of profiling fields only has no utilization: no gpu_samples row (which
-- would count as a sample of unknown utilization), only its details.
INSERT INTO gpu_samples (sample_at, machine_id, gpu_index, util_pct, file_id)
SELECT sample_at, machine_id, gpu_index, util_pct, $file_id
FROM stage_gpu WHERE problem IS NULL AND gpu_instance_id IS NULL AND NOT profile_only
UNION ALL
SELECT sample_at, machine_id, gpu_index, util_pct, $file_id FROM stage_fast;

INSERT INTO gpu_sample_details (sample_at, machine_id, gpu_index, mem_util_pct, mem_used_mib, mem_total_mib,
                                power_w, temp_c, sm_clock_mhz, gr_engine_active, throttle_reasons, gpu_instance_id,
                                sm_active, sm_occupancy, tensor_active, fp64_active, fp32_active, fp16_active, dram_active,
                                pcie_tx_bytes, pcie_rx_bytes, nvlink_tx_bytes, nvlink_rx_bytes, file_id)
SELECT sample_at, machine_id, gpu_index, mem_util_pct, mem_used_mib, mem_total_mib,
       power_w, temp_c, sm_clock_mhz, gr_engine_active, throttle_reasons, gpu_instance_id,
       sm_active, sm_occupancy, tensor_active, fp64_active, fp32_active, fp16_active, dram_active,
       pcie_tx_bytes, pcie_rx_bytes, nvlink_tx_bytes, nvlink_rx_bytes, $file_id
FROM stage_gpu
WHERE problem IS NULL
  AND (gpu_instance_id IS NOT NULL OR mem_util_pct IS NOT NULL OR mem_used_mib IS NOT NULL
       OR mem_total_mib IS NOT NULL OR power_w IS NOT NULL OR temp_c IS NOT NULL
       OR sm_clock_mhz IS NOT NULL OR gr_engine_active IS NOT NULL OR throttle_reasons IS NOT NULL OR has_profile)
UNION ALL
SELECT sample_at, machine_id, gpu_index, mem_util_pct, mem_used_mib, mem_total_mib,
       power_w, temp_c, sm_clock_mhz, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL, $file_id
FROM stage_fast
WHERE mem_util_pct IS NOT NULL OR mem_used_mib IS NOT NULL OR mem_total_mib IS NOT NULL OR power_w IS NOT NULL
   OR temp_c IS NOT NULL OR sm_clock_mhz IS NOT NULL;

INSERT INTO gpu_devices (machine_id, gpu_index, uuid, pci_bus_id, model, file_id)
SELECT DISTINCT machine_id, gpu_index, uuid, pci_bus_id, model, $file_id
FROM (SELECT machine_id, gpu_index, uuid, pci_bus_id, model FROM stage_gpu WHERE problem IS NULL
      UNION ALL
      SELECT machine_id, gpu_index, uuid, pci_bus_id, model FROM stage_fast)
WHERE uuid IS NOT NULL OR pci_bus_id IS NOT NULL OR model IS NOT NULL;

-- A lost GPU stays lost until the node reboots: one event per GPU and file, from its first lost sample.
INSERT INTO gpu_events (event_at, machine_id, gpu_index, kind, detail, file_id, line)
SELECT min(sample_at), machine_id, gpu_index, 'gpu_lost',
       printf('%s in %d samples from %s to %s', min(gpu_lost), count(*), strftime(min(sample_at), '%Y-%m-%d %H:%M:%S'), strftime(max(sample_at), '%Y-%m-%d %H:%M:%S')),
       $file_id, min(line)
FROM stage_gpu WHERE gpu_lost IS NOT NULL GROUP BY machine_id, gpu_index;

-- Tool errors printed instead of data: at the time of the last sample before them, where the reader had none.
INSERT INTO gpu_events (event_at, machine_id, gpu_index, kind, detail, file_id, line)
SELECT coalesce(e.event_at, g.sample_at), e.machine_id, e.gpu_index, e.kind, left(e.detail, 500), $file_id, e.line
FROM stage_gpu_events e
ASOF LEFT JOIN (SELECT line, max(sample_at) AS sample_at
                FROM (SELECT line, sample_at FROM stage_gpu UNION ALL SELECT line, sample_at FROM stage_fast)
                WHERE sample_at IS NOT NULL GROUP BY line) g
    ON e.line >= g.line;
