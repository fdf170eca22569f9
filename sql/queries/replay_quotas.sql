-- replay_quotas: the GPU limits Slurm's accounting database gave (table quotas, from
-- sacctmgr), for the replay of queueing: for each holder, the word of the latest ingested
-- file that names it (a later snapshot replaces an earlier one; a holder a later file leaves
-- out keeps its earlier limit).
-- Parameters: none.
-- Output: source, kind (account, user, qos_user, qos_group), vc, user_name, qos, gpus
-- (NULL: no GPU limit), path (the file it came from).
-- Stage: replay
SELECT q.source, q.kind, q.vc, q.user_name, q.qos, q.gpus, f.path
FROM quotas q JOIN ingested_files f USING (file_id)
QUALIFY row_number() OVER (PARTITION BY q.source, q.kind, q.vc, q.user_name, q.qos ORDER BY q.file_id DESC) = 1
ORDER BY q.source, q.kind, q.vc NULLS FIRST, q.user_name NULLS FIRST, q.qos NULLS FIRST
