-- Store the GPU limits of one sacctmgr file (gpucluster_analysis/ingest/slurm/sacctmgr.py).
-- Parameters: $file_id, $source.
-- Needs the temp table stage_quotas: one row per limit read (line, kind, vc, user_name, qos,
-- gpus, tres, text), or per unreadable line (problem set).
-- A holder (kind, account, user, QOS) listed twice in one file (another cluster or partition
-- of the same association) keeps its first line; the later ones are rejects.

CREATE OR REPLACE TEMP TABLE stage_quotas_checked AS
SELECT *,
       CASE WHEN problem IS NOT NULL THEN problem
            WHEN first_line < line THEN 'the same ' || CASE WHEN qos IS NOT NULL THEN 'QOS' ELSE 'account and user' END
                 || ' as line ' || first_line || ' (another cluster or partition?): gca keeps one GPU limit each, the first'
       END AS reject_reason
FROM (
    SELECT *, min(line) OVER (PARTITION BY kind, vc, user_name, qos) AS first_line FROM stage_quotas
);

-- A line is stored whole or rejected whole (a QOS line gives two limits).
CREATE OR REPLACE TEMP TABLE stage_quotas_lines AS
SELECT line, min(reject_reason) AS reason, any_value(text) AS text
FROM stage_quotas_checked GROUP BY line;

INSERT INTO rejects (file_id, line, reason, text)
SELECT $file_id, line, reason, text FROM stage_quotas_lines WHERE reason IS NOT NULL ORDER BY line;

INSERT INTO quotas (source, kind, vc, user_name, qos, gpus, tres, file_id, line)
SELECT $source, c.kind, c.vc, c.user_name, c.qos, c.gpus, c.tres, $file_id, c.line
FROM stage_quotas_checked c JOIN stage_quotas_lines l USING (line)
WHERE l.reason IS NULL
ORDER BY c.line, c.kind;
