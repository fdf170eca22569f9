-- The telemetry files not yet compared with the files of their kind before them (they have no
-- spans, and hold rows), and how many files of their format hold samples (rows, or spans: a
-- file whose every sample was a duplicate has spans and may hold samples handed over to it).
-- A store's first file of a kind stays unchecked until another comes: nothing came before it.
-- Parameters: $formats (every format with a sample kind).
-- Output: format, holding (files), unchecked (file ids, ascending).

SELECT format,
       count(*) FILTER (WHERE spanned OR rows_loaded > 0) AS holding,
       list(file_id ORDER BY file_id) FILTER (WHERE NOT spanned AND rows_loaded > 0) AS unchecked
FROM (
    SELECT f.format, f.file_id, f.rows_loaded, s.file_id IS NOT NULL AS spanned
    FROM ingested_files f
    LEFT JOIN (SELECT DISTINCT file_id FROM sample_spans) s USING (file_id)
    WHERE list_contains($formats, f.format)
)
GROUP BY format
