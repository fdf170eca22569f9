-- rejects_by_file: every ingested file with its loaded rows and rejected lines, and the
-- reasons for the rejects with how often each occurred and the first line it hit.
-- Parameters: none.
-- Output: path, format, rows_loaded, rejects, reasons (text: 'reason (count, first at line N); ...').
WITH by_reason AS (
    SELECT file_id, reason, count(*) AS n, min(line) AS first_line
    FROM rejects
    GROUP BY file_id, reason
)
SELECT f.path, f.format, f.rows_loaded, f.rejects,
       string_agg(r.reason || ' (' || r.n || coalesce(', first at line ' || r.first_line, '') || ')', '; '
                  ORDER BY r.n DESC, r.reason) AS reasons
FROM ingested_files f
LEFT JOIN by_reason r USING (file_id)
GROUP BY f.file_id, f.path, f.format, f.rows_loaded, f.rejects
ORDER BY f.rejects DESC, f.path
