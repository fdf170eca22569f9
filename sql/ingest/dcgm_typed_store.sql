-- Store what dcgm_fast.py typed from a clean Prometheus query_range answer or scrape file
-- (values checked as nvsmi_check.sql checks them): as nvsmi_store.sql stores checked rows.
-- Parameters: $file_id. Input: stage_dcgm_typed (one row per GPU and time: machine_id,
-- sample_at, gpu_index, util_pct, mem_util_pct, mem_used_mib, mem_total_mib, power_w, temp_c,
-- sm_clock_mhz, gr_engine_active, the profiling fields, in_samples, has_details),
-- stage_dcgm_devices (machine_id, gpu_index, uuid, pci_bus_id, model), stage_dcgm_xid.

INSERT INTO gpu_samples (sample_at, machine_id, gpu_index, util_pct, file_id)
SELECT sample_at, machine_id, gpu_index, util_pct, $file_id FROM stage_dcgm_typed WHERE in_samples;

INSERT INTO gpu_sample_details (sample_at, machine_id, gpu_index, mem_util_pct, mem_used_mib, mem_total_mib,
                                power_w, temp_c, sm_clock_mhz, gr_engine_active, throttle_reasons, gpu_instance_id,
                                sm_active, sm_occupancy, tensor_active, fp64_active, fp32_active, fp16_active, dram_active,
                                pcie_tx_bytes, pcie_rx_bytes, nvlink_tx_bytes, nvlink_rx_bytes, file_id)
SELECT sample_at, machine_id, gpu_index, mem_util_pct, mem_used_mib, mem_total_mib,
       power_w, temp_c, sm_clock_mhz, gr_engine_active, NULL, NULL,
       sm_active, sm_occupancy, tensor_active, fp64_active, fp32_active, fp16_active, dram_active,
       pcie_tx_bytes, pcie_rx_bytes, nvlink_tx_bytes, nvlink_rx_bytes, $file_id
FROM stage_dcgm_typed WHERE has_details;

-- one row per GPU with rows that names it (stage_dcgm_devices)
INSERT INTO gpu_devices (machine_id, gpu_index, uuid, pci_bus_id, model, file_id)
SELECT machine_id, gpu_index, uuid, pci_bus_id, model, $file_id FROM stage_dcgm_devices;

-- Xid events (stage_dcgm_xid: line, event_at, machine_id, gpu_index, kind, detail), found as
-- dcgm_pivot.sql finds them.
INSERT INTO gpu_events (event_at, machine_id, gpu_index, kind, detail, file_id, line)
SELECT event_at, machine_id, gpu_index, kind, detail, $file_id, line FROM stage_dcgm_xid;
