-- reject_examples: for each file and kind of reject reason (reason_kind, as rejects_by_file
-- groups them), the first three rejected rows as they were: line, full reason and the
-- row's text (at most 200 characters), so that rejects_by_file stays short.
-- Parameters: none.
-- Output: path, kind, line, reason, text.
-- Stage: result
SELECT f.path, r.kind, r.line, r.reason, left(r.text, 200) AS text
FROM (
    SELECT *, row_number() OVER (PARTITION BY file_id, kind ORDER BY line NULLS LAST, reason) AS nth
    FROM (SELECT file_id, line, reason, text, reason_kind(reason, text) AS kind FROM rejects)
) r
JOIN ingested_files f USING (file_id)
WHERE r.nth <= 3
ORDER BY f.path, r.kind, r.line NULLS LAST, r.reason
