-- Turn the rows of `dcgmi dmon -e FIELDS` output into stage_raw (then nvsmi_store.sql stores them).
-- Parameters: $host, $start (UTC of the first sample; NULL when the file has no rows),
-- $interval (seconds between samples, NULL: one sample), $cut_line (the last line when it has no
-- line end, else NULL) and $cut_reason.
-- Input: stage_lines(line, block, text): the entity rows (and unknown lines) under each header;
-- block -1 for lines before the first header that are not the tool's output.
-- stage_blocks(block, n_fields, starts, fixed, legacy, p_<column>...): per header, its number of
-- fields, the 1-based column where each starts in the header line, whether a missing value is
-- left blank in its column (fixed: DCGM 4.x), whether entities are listed GPUs first, then
-- instances (legacy: the `# Entity` header of DCGM before 2.4), and p_<column> the field that
-- fills stage_raw's <column> (GRACT for gr_engine_text, ...; NULL: the header has none).
-- A row is `<entity> <id>` (`GPU 0`, `GPU-I 1`, `GPU 0 LINK 3`, `CPU Core 2`) and one value per
-- field. GPU rows and MIG instance rows (GPU-I) are kept; other entities (compute instances,
-- NVSwitches, links, CPUs, ConnectX) are left out. The k-th sample of the run is at
-- $start + k * $interval; a sample begins where an entity shows again (every entity's k-th row).

CREATE OR REPLACE TEMP TABLE stage_dcgmi AS
WITH parsed AS (
    SELECT line, block, text,
           regexp_extract(text, '^((GPU-CI|GPU-I|GPU \d+ LINK|SW \d+ LINK|GPU|vGPU|Switch|CPU Core|CPU|CX|UNKNOWN|None)\s+(\d+))(\s|$)',
                          ['entity', 'kind', 'id', 'end']) AS e
    FROM stage_lines
)
SELECT line, block, text, nullif(e.kind, '') AS kind, TRY_CAST(nullif(e.id, '') AS INTEGER) AS entity_id,
       length(e.entity) + length(e."end") AS entity_chars, trim(substr(text, length(e.entity) + 1)) AS values_text
FROM parsed;

DROP TABLE stage_lines;

-- Which sample each row is of, and the GPU a MIG instance row belongs to: from a narrow table
-- (window functions sort what they carry).
CREATE OR REPLACE TEMP TABLE stage_dcgmi_order AS
WITH occurrences AS (
    SELECT line, block, kind, entity_id,
           CASE WHEN kind IS NOT NULL THEN row_number() OVER (PARTITION BY kind, entity_id ORDER BY line) - 1 END AS occurrence
    FROM stage_dcgmi
),
gpus AS (
    SELECT block, count(DISTINCT entity_id) AS block_gpus FROM stage_dcgmi WHERE kind = 'GPU' GROUP BY block
)
SELECT o.line,
       -- the sample a row belongs to: the most times any entity has shown so far (a sample
       -- that misses an entity's row does not shift the entity's later rows)
       max(o.occurrence) OVER (ORDER BY o.line ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS sample,
       -- a MIG instance's GPU: the GPU row printed above it since the header
       last_value(CASE WHEN o.kind = 'GPU' THEN o.entity_id END IGNORE NULLS)
           OVER (PARTITION BY o.block ORDER BY o.line ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS parent_gpu,
       coalesce(g.block_gpus, 0) AS block_gpus
FROM occurrences o LEFT JOIN gpus g USING (block);

CREATE OR REPLACE TEMP TABLE stage_raw AS
WITH split AS (
    SELECT d.*, b.* EXCLUDE (block), CASE WHEN values_text = '' THEN []::VARCHAR[] ELSE regexp_split_to_array(values_text, '\s+') END AS words
    FROM stage_dcgmi d LEFT JOIN stage_blocks b ON d.block = b.block
),
columned AS (
    SELECT *,
           -- each field's own columns of the line, as the header places them (DCGM 4.x leaves a
           -- missing value blank there, and a string value such as a GPU name has blanks inside)
           CASE WHEN fixed AND len(words) <> n_fields THEN list_transform(range(1, n_fields + 1), lambda i:
               trim(substr(text, starts[i], CASE WHEN i < n_fields THEN starts[i + 1] - starts[i] ELSE 100000 END)))
           END AS columns
    FROM split
),
fielded AS (
    SELECT *,
           CASE WHEN len(words) = n_fields THEN words
                -- by columns only where they hold exactly the words of the line, none cut in two
                WHEN fixed AND entity_chars < starts[1]
                     AND array_to_string(list_filter(columns, lambda c: c <> ''), ' ') = array_to_string(words, ' ')
                    THEN columns
           END AS v
    FROM columned
),
valued AS (
    SELECT f.*, o.sample, o.parent_gpu, o.block_gpus,
           -- dcgmi's blank spellings: N/A (no value), N/W (not watched), N/S, N/P
           CASE WHEN contains(values_text, 'N/') THEN list_transform(v, lambda x: CASE WHEN x LIKE 'N/_' THEN 'N/A' ELSE x END)
                ELSE v END AS w,
           CASE WHEN f.block = -1 THEN 'not the tool''s output: a shell prompt or a note before the first header'
                WHEN f.line = $cut_line THEN $cut_reason
                WHEN kind IS NULL THEN 'not a dcgmi dmon row (an entity such as GPU 0 or GPU-I 1, then one value per field)'
                WHEN v IS NULL THEN printf('%d values where the header has %d fields', len(words), n_fields)
                WHEN kind = 'GPU-I' AND legacy AND o.block_gpus > 1
                    THEN printf('GPU-I %d: DCGM before 2.4 lists every GPU before every instance, so which of the %d GPUs'
                                ' this instance belongs to cannot be told', entity_id, o.block_gpus)
                WHEN kind = 'GPU-I' AND o.parent_gpu IS NULL
                    THEN printf('GPU-I %d: no GPU row above it names its GPU (dcgmi lists an instance right after its GPU'
                                ' when the GPU is monitored too): monitor both, e.g. dcgmi dmon -i 0,i:0 or a group of the'
                                ' GPU and its instances', entity_id)
           END AS problem
    FROM fielded f JOIN stage_dcgmi_order o USING (line)
    WHERE f.block = -1 OR kind IS NULL OR kind IN ('GPU', 'GPU-I')
)
SELECT line, text, $host AS machine_id, CAST(NULL AS TIMESTAMP) AS local_at,
       CAST($start AS TIMESTAMP) + to_seconds(coalesce(CAST($interval AS DOUBLE), 0) * sample) AS utc_at,
       CAST(NULL AS VARCHAR) AS time_text,
       CAST(CASE WHEN kind = 'GPU' THEN entity_id WHEN kind = 'GPU-I' THEN parent_gpu END AS VARCHAR) AS index_text,
       CAST(CASE WHEN kind = 'GPU-I' THEN entity_id END AS VARCHAR) AS instance_text,
       w[p_uuid] AS uuid, w[p_pci_text] AS pci_text, w[p_model] AS model,
       w[p_util_text] AS util_text, w[p_mem_util_text] AS mem_util_text, w[p_mem_used_text] AS mem_used_text,
       -- total: DCGM's own, else used + free + reserved (used + free alone misses the driver's reservation)
       coalesce(w[p_fb_total_text], CAST(gpu_number(w[p_mem_used_text], []) + gpu_number(w[p_fb_free_text], [])
                                         + gpu_number(w[p_fb_reserved_text], []) AS VARCHAR)) AS mem_total_text,
       w[p_power_text] AS power_text, w[p_temp_text] AS temp_text, w[p_sm_clock_text] AS sm_clock_text,
       w[p_gr_engine_text] AS gr_engine_text,
       CAST(NULL AS VARCHAR) AS throttle_mask_text, CAST(NULL AS VARCHAR) AS throttle_text,
       w[p_sm_active_text] AS sm_active_text, w[p_sm_occupancy_text] AS sm_occupancy_text,
       w[p_tensor_active_text] AS tensor_active_text, w[p_fp64_active_text] AS fp64_active_text,
       w[p_fp32_active_text] AS fp32_active_text, w[p_fp16_active_text] AS fp16_active_text,
       w[p_dram_active_text] AS dram_active_text, w[p_pcie_tx_text] AS pcie_tx_text, w[p_pcie_rx_text] AS pcie_rx_text,
       w[p_nvlink_tx_text] AS nvlink_tx_text, w[p_nvlink_rx_text] AS nvlink_rx_text,
       problem
FROM valued;

DROP TABLE stage_dcgmi;
DROP TABLE stage_dcgmi_order;
