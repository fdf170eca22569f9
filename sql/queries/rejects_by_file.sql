-- rejects_by_file: every ingested file with its loaded rows and rejected lines, and the
-- reasons for the rejects with how often each occurred and the first line it hit.
-- Job logs come by the thousand and have no rejects: they are one row per folder
-- ('<folder>/ (N job logs)') instead of one per file.
-- Parameters: none.
-- Output: path, format, files (1, or the job logs in the folder), rows_loaded, rejects,
-- reasons (text: 'reason (count, first at line N); ...').
WITH by_reason AS (
    SELECT file_id, reason, count(*) AS n, min(line) AS first_line
    FROM rejects
    GROUP BY file_id, reason
),
per_file AS (
    SELECT f.path, f.format, f.rows_loaded, f.rejects,
           string_agg(r.reason || ' (' || r.n || coalesce(', first at line ' || r.first_line, '') || ')', '; '
                      ORDER BY r.n DESC, r.reason) AS reasons
    FROM ingested_files f
    LEFT JOIN by_reason r USING (file_id)
    WHERE f.format <> 'job_log'
    GROUP BY f.file_id, f.path, f.format, f.rows_loaded, f.rejects
),
log_folders AS (
    -- logs/<job>/attempt_<k>/stderr.log groups under logs/, slurm-<id>.out under its folder
    SELECT regexp_replace(path, '/(?:[^/]+/attempt_\d+/)?[^/]+$', '/') AS folder,
           count(*) AS files, sum(rows_loaded) AS rows_loaded, sum(rejects) AS rejects
    FROM ingested_files
    WHERE format = 'job_log'
    GROUP BY folder
)
SELECT path, format, 1 AS files, rows_loaded, rejects, reasons FROM per_file
UNION ALL
SELECT folder || ' (' || files || ' job logs)', 'job_log', files, rows_loaded, rejects, NULL FROM log_folders
ORDER BY rejects DESC, path
