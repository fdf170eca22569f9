-- Turn the data lines of an nvidia-smi --query-gpu CSV log or a dmon log into stage_raw.
-- Parameters: $host, $whitespace (dmon: fields split on blanks; CSV: on commas),
-- $start (UTC of the first sample when the log has no times, else NULL), $interval (seconds),
-- $cut_line (the last line when it has no line end: cut off, so rejected as $cut_reason; else NULL).
-- Input: stage_lines(line, block, text) and stage_blocks(block, n_fields, p_<column>...):
-- each block is the stretch of lines under one header, and p_<column> the 1-based field
-- holding that measure in it (NULL: the block does not have it). The reader streamed the
-- file into stage_lines; headers, blank lines and tool errors never get here. Lines before
-- the first header that are no data (block -1, in no block) are rejects.

CREATE OR REPLACE TEMP TABLE stage_raw AS
WITH split AS (
    SELECT l.line, l.text, b.*,
           CASE WHEN $whitespace THEN regexp_split_to_array(trim(l.text), '\s+')
                ELSE string_split(l.text, ',') END AS f
    FROM stage_lines l LEFT JOIN stage_blocks b ON l.block = b.block
),
fields AS (
    SELECT line, text, block, n_fields, len(f) AS n,
           trim(f[p_time]) AS time_text, trim(f[p_date]) AS date_text,
           trim(f[p_index]) AS index_text, trim(f[p_uuid]) AS uuid, trim(f[p_pci]) AS pci_text,
           trim(f[p_model]) AS model, trim(f[p_util]) AS util_text, trim(f[p_mem_util]) AS mem_util_text,
           trim(f[p_mem_used]) AS mem_used_text, trim(f[p_mem_total]) AS mem_total_text,
           trim(f[p_power]) AS power_text, trim(f[p_temp]) AS temp_text, trim(f[p_sm_clock]) AS sm_clock_text,
           trim(f[p_throttle_mask]) AS throttle_mask_text,
           -- individual reasons (clocks_throttle_reasons.hw_slowdown = Active) as a name list
           CASE WHEN len(reason_pos) > 0 THEN coalesce(nullif(array_to_string(list_filter(
               list_transform(range(1, len(reason_pos) + 1),
                              lambda i: CASE WHEN trim(f[reason_pos[i]]) = 'Active' THEN reason_names[i] END),
               lambda x: x IS NOT NULL), ','), ''), 'none') END AS throttle_text
    FROM split
)
SELECT line, text, $host AS machine_id,
       -- exactly nvidia-smi's forms: a cast would also take `08:12:38 PM` or `+02:00` and drop them
       CASE WHEN date_text IS NULL
            THEN try_strptime(time_text, ['%Y/%m/%d %H:%M:%S.%f', '%Y/%m/%d %H:%M:%S', '%Y-%m-%d %H:%M:%S.%f', '%Y-%m-%d %H:%M:%S'])
            ELSE try_strptime(date_text || ' ' || time_text, '%Y%m%d %H:%M:%S') END AS local_at,
       CASE WHEN time_text IS NULL THEN
           CAST($start AS TIMESTAMP) + to_seconds(coalesce(CAST($interval AS DOUBLE), 0) * (row_number() OVER (
               PARTITION BY coalesce(index_text, uuid, pci_text) ORDER BY line) - 1))
       END AS utc_at,
       nullif(concat_ws(' ', date_text, time_text), '') AS time_text,
       index_text, NULL AS instance_text, uuid, pci_text, model, util_text, mem_util_text,
       mem_used_text, mem_total_text, power_text, temp_text, sm_clock_text,
       NULL AS gr_engine_text, throttle_mask_text, throttle_text,
       CASE WHEN block IS NULL THEN 'not the tool''s output: a shell prompt or a note before the first header'
            WHEN line = $cut_line THEN $cut_reason
            WHEN n <> n_fields THEN printf('%d fields where the header has %d', n, n_fields) END AS problem
FROM fields;

-- The lines are no longer needed: free their memory before the store step.
DROP TABLE stage_lines;
