-- rejects_by_file: every ingested file with its loaded rows and rejected lines, and the
-- kinds of reasons for the rejects (reason_kind: the reason with the row's own values
-- masked, so that 8,000 rows rejected for the same cause are one kind), each with how often
-- it occurred and the first line it hit; at most 5 kinds per file, then how many more
-- (reject_examples.csv has examples of each kind).
-- Job logs come by the thousand and have no rejects: they are one row per folder
-- ('<folder>/ (N job logs)') instead of one per file.
-- Parameters: none.
-- Output: path, format, files (1, or the job logs in the folder), rows_loaded, rejects,
-- reasons (text: 'kind (count, first at line N); ...; and K more kinds').
-- Stage: result
WITH by_reason AS (
    SELECT file_id, kind, n, first_line,
           row_number() OVER (PARTITION BY file_id ORDER BY n DESC, kind) AS rank,
           count(*) OVER (PARTITION BY file_id) AS kinds
    FROM (
        SELECT file_id, reason_kind(reason, text) AS kind, count(*) AS n, min(line) AS first_line
        FROM rejects
        GROUP BY ALL
    )
),
per_file AS (
    SELECT f.path, f.format, f.rows_loaded, f.rejects,
           string_agg(r.kind || ' (' || r.n || coalesce(', first at line ' || r.first_line, '') || ')', '; '
                      ORDER BY r.n DESC, r.kind) FILTER (WHERE r.rank <= 5)
               || CASE WHEN max(r.kinds) > 5 THEN '; and ' || (max(r.kinds) - 5) || ' more kinds' ELSE '' END AS reasons
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
