-- The plain sample lines of a dcgm-exporter scrape file into stage_dcgm (see dcgm_pivot.sql),
-- beside what dcgm.py staged line by line. Parameters: $fallback (the time of samples
-- without one and without a `# time:` comment above them: --time or the file name's
-- stamp, else NULL), $epoch_ms_2001 (smaller sample timestamps are not epoch milliseconds).
-- Input: stage_prom_plain(line, text): lines of the shape `NAME{labels} VALUE [TIMESTAMP]`
-- with no brace or backslash inside the labels, so the series (`NAME{labels}`) ends at
-- the only `}`; stage_prom_series(series, measure, problem, host, <label columns>): each
-- distinct series of a metric gca stores, parsed once (problem: its labels do not parse);
-- stage_prom_times(line, utc_at): the `# time:` comments. Lines of other series are dropped.

INSERT INTO stage_dcgm (line, text, host, gpu_text, instance_text, uuid, pci_text, model, pod, namespace, container,
                        hpc_job, measure, value_text, utc_at, problem)
WITH split AS (
    SELECT line, text, left(text, strpos(text, '}')) AS series,
           -- value and optional timestamp, separated by blanks
           list_filter(string_split(replace(substr(text, strpos(text, '}') + 1), chr(9), ' '), ' '), lambda x: x <> '')
               AS parts
    FROM stage_prom_plain
),
timed AS (
    SELECT s.line, s.text, s.parts[1] AS value_text, s.parts[2] AS stamp, i.*,
           TRY_CAST(s.parts[2] AS BIGINT) AS stamp_ms, t.utc_at AS scrape_at
    FROM split s
    JOIN stage_prom_series i USING (series)
    ASOF LEFT JOIN stage_prom_times t ON s.line >= t.line
),
checked AS (
    SELECT *,
           CASE WHEN problem IS NOT NULL THEN problem
                WHEN stamp IS NOT NULL AND abs(stamp_ms) < $epoch_ms_2001
                    THEN 'sample timestamp ' || stamp || ' is not in epoch milliseconds'
                -- beyond year 9999, or not a 64-bit number
                WHEN stamp IS NOT NULL AND (stamp_ms IS NULL OR abs(stamp_ms) > 253402300799999)
                    THEN 'unreadable sample timestamp ' || stamp
           END AS why
    FROM timed
)
SELECT line, CASE WHEN why IS NOT NULL THEN left(text, 500) END, host, gpu_text, instance_text, uuid, pci_text, model,
       pod, namespace, container, hpc_job, measure, value_text,
       CASE WHEN why IS NULL THEN coalesce(CASE WHEN stamp IS NOT NULL THEN epoch_ms(stamp_ms) END, scrape_at,
                                           CAST($fallback AS TIMESTAMP)) END,
       why
FROM checked;
