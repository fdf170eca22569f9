-- Load one Philly cluster_job_log (a JSON array of jobs) into jobs, attempts, allocations.
-- Parameters: $path (the file), $file_id, $zone (zone of the log's naive times), and the
-- sanity bounds $window_start, $window_end, $outside_years, $max_gpus_per_node, $gpu_bound
-- (gpucluster_analysis/bounds.py).
-- Needs the temp table zone_periods for $zone (gpucluster_analysis.timezones).
-- A job whose record is malformed is rejected whole (rejects.line is filled in
-- afterwards by the loader, which finds the record in the file).

CREATE OR REPLACE TEMP TABLE stage_job AS
SELECT
    ordinality AS record_no,
    nullif(trim(jobid), '') AS job_id,
    status, vc, "user" AS user_name, submitted_time,
    coalesce(attempts, []) AS attempts
FROM read_json($path, format = 'array', maximum_object_size = 268435456, columns = {
    jobid: 'VARCHAR', status: 'VARCHAR', vc: 'VARCHAR', "user": 'VARCHAR',
    submitted_time: 'VARCHAR',
    attempts: 'STRUCT(start_time VARCHAR, end_time VARCHAR, detail STRUCT(ip VARCHAR, gpus VARCHAR[])[])[]'
}) WITH ORDINALITY;

-- One row per attempt, with its position in the source list.
CREATE OR REPLACE TEMP TABLE stage_attempt AS
SELECT record_no, job_id, source_index, a.start_time, a.end_time, coalesce(a.detail, []) AS detail
FROM (
    SELECT record_no, job_id,
           unnest(attempts) AS a,
           unnest(generate_series(0, len(attempts) - 1)) AS source_index
    FROM stage_job
);

CREATE OR REPLACE TEMP TABLE stage_alloc AS
SELECT record_no, job_id, source_index,
       nullif(trim(d.ip), '') AS machine_id,
       g AS gpu_text,
       -- wider than allocations.gpu_index: an index past the bound is named in its reject
       TRY_CAST(regexp_extract(g, '^\s*gpu(\d+)\s*$', 1) AS BIGINT) AS gpu_index
FROM (SELECT record_no, job_id, source_index, unnest(detail) AS d FROM stage_attempt)
CROSS JOIN LATERAL (SELECT unnest(coalesce(d.gpus, [])) AS g);

-- Every distinct naive local time, converted once through the zone's offset periods.
CREATE OR REPLACE TEMP TABLE stage_time AS
WITH texts AS (
    SELECT submitted_time AS t FROM stage_job
    UNION SELECT start_time FROM stage_attempt
    UNION SELECT end_time FROM stage_attempt
),
parsed AS (
    SELECT t, try_strptime(trim(t), '%Y-%m-%d %H:%M:%S') AS local_ts
    FROM texts WHERE t IS NOT NULL AND trim(t) NOT IN ('', 'None', 'null', 'NULL', 'NA')
),
periods AS (SELECT local_start, offset_s FROM zone_periods WHERE zone = $zone)
SELECT p.t, p.local_ts, p.local_ts - to_seconds(z.offset_s) AS utc_ts,
       NOT (p.local_ts >= $window_start AND p.local_ts < $window_end) AS out_of_years
FROM parsed p ASOF LEFT JOIN periods z ON p.local_ts >= z.local_start;

-- Why a record cannot be stored; NULL when it is fine. First reason wins. A job is stored
-- whole or not at all: one attempt with an absurd time or GPU (bounds.py) rejects its job.
CREATE OR REPLACE TEMP TABLE stage_job_problem AS
WITH bad_time AS (
    SELECT t FROM stage_time WHERE local_ts IS NULL
),
far_time AS (
    SELECT t FROM stage_time WHERE out_of_years
),
job_problems AS (
    SELECT record_no, 'job has no jobid' AS reason FROM stage_job WHERE job_id IS NULL
    UNION ALL
    SELECT record_no, 'unreadable submitted_time ' || submitted_time FROM stage_job
    WHERE submitted_time IN (SELECT t FROM bad_time)
    UNION ALL
    SELECT record_no, 'attempt ' || source_index || ': unreadable start_time ' || start_time FROM stage_attempt
    WHERE start_time IN (SELECT t FROM bad_time)
    UNION ALL
    SELECT record_no, 'attempt ' || source_index || ': unreadable end_time ' || end_time FROM stage_attempt
    WHERE end_time IN (SELECT t FROM bad_time)
    UNION ALL
    SELECT record_no, 'submitted_time ' || submitted_time || $outside_years FROM stage_job
    WHERE submitted_time IN (SELECT t FROM far_time)
    UNION ALL
    SELECT record_no, 'attempt ' || source_index || ': start_time ' || start_time || $outside_years FROM stage_attempt
    WHERE start_time IN (SELECT t FROM far_time)
    UNION ALL
    SELECT record_no, 'attempt ' || source_index || ': end_time ' || end_time || $outside_years FROM stage_attempt
    WHERE end_time IN (SELECT t FROM far_time)
    UNION ALL
    SELECT record_no, 'attempt ' || source_index || ': detail entry without a machine (ip)' FROM stage_alloc
    WHERE machine_id IS NULL
    UNION ALL
    SELECT record_no, 'attempt ' || source_index || ': unreadable GPU name ' || coalesce(gpu_text, 'null')
    FROM stage_alloc WHERE gpu_index IS NULL
    UNION ALL
    -- an index at or past the bound: the machine would hold more GPUs than any does
    SELECT record_no, 'attempt ' || source_index || ': ' || trim(gpu_text) || ' on machine ' || coalesce(machine_id, '(none)')
                      || $gpu_bound
    FROM stage_alloc WHERE gpu_index >= $max_gpus_per_node
    UNION ALL
    SELECT record_no, 'duplicate jobid (first seen at record ' || first_record || ')'
    FROM (SELECT record_no, min(record_no) OVER (PARTITION BY job_id) AS first_record FROM stage_job WHERE job_id IS NOT NULL)
    WHERE record_no > first_record
    UNION ALL
    SELECT s.record_no, 'jobid already stored from ' || f.path
    FROM stage_job s JOIN jobs j ON j.source = 'philly' AND j.job_id = s.job_id
    JOIN ingested_files f ON f.file_id = j.file_id
),
-- a negative run time, which the job's GPU time would subtract: said of a job whose times are
-- readable and in the years, after any other reason
order_problems AS (
    SELECT a.record_no, 'attempt ' || a.source_index || ': end_time ' || a.end_time || ' is before start_time ' || a.start_time
           AS reason
    FROM stage_attempt a JOIN stage_time ts ON ts.t = a.start_time JOIN stage_time te ON te.t = a.end_time
    WHERE te.utc_ts < ts.utc_ts
)
SELECT record_no, min_by(reason, (rank, reason)) AS reason
FROM (SELECT record_no, 1 AS rank, reason FROM job_problems UNION ALL SELECT record_no, 2, reason FROM order_problems)
GROUP BY record_no;

INSERT INTO rejects (file_id, line, reason, text)
SELECT $file_id, NULL, p.reason, 'record ' || p.record_no || ' jobid ' || coalesce(s.job_id, '(none)')
FROM stage_job_problem p JOIN stage_job s USING (record_no);

INSERT INTO jobs (source, job_id, user_name, vc, status, source_status, submit_at, file_id)
SELECT 'philly', s.job_id, nullif(trim(s.user_name), ''), nullif(trim(s.vc), ''),
       CASE lower(trim(s.status))
           WHEN 'pass' THEN 'passed' WHEN 'passed' THEN 'passed'
           WHEN 'failed' THEN 'failed' WHEN 'killed' THEN 'killed'
           WHEN 'running' THEN 'running' WHEN 'pending' THEN 'pending' WHEN 'queued' THEN 'pending'
           ELSE 'unknown' END,
       s.status, t.utc_ts, $file_id
FROM stage_job s
LEFT JOIN stage_time t ON t.t = s.submitted_time
WHERE s.record_no NOT IN (SELECT record_no FROM stage_job_problem);

CREATE OR REPLACE TEMP TABLE stage_attempt_ok AS
SELECT a.record_no, a.job_id, a.source_index, ts.utc_ts AS start_at, te.utc_ts AS end_at,
       (row_number() OVER (PARTITION BY a.job_id ORDER BY ts.utc_ts ASC NULLS LAST, a.source_index) - 1)::INTEGER AS attempt_no
FROM stage_attempt a
LEFT JOIN stage_time ts ON ts.t = a.start_time
LEFT JOIN stage_time te ON te.t = a.end_time
WHERE a.record_no NOT IN (SELECT record_no FROM stage_job_problem);

INSERT INTO attempts (source, job_id, attempt_no, source_index, start_at, end_at, file_id)
SELECT 'philly', job_id, attempt_no, source_index, start_at, end_at, $file_id FROM stage_attempt_ok;

INSERT INTO allocations (source, job_id, attempt_no, machine_id, gpu_index, file_id)
SELECT DISTINCT 'philly', a.job_id, a.attempt_no, l.machine_id, l.gpu_index, $file_id
FROM stage_alloc l
JOIN stage_attempt_ok a ON a.record_no = l.record_no AND a.source_index = l.source_index;

-- The job log lists every GPU an attempt got: one listed without any had none (a known
-- 0, unlike a source that gives no count; jobs.sql tells the two apart).
UPDATE attempts SET num_gpus = 0
WHERE file_id = $file_id
  AND NOT EXISTS (SELECT 1 FROM allocations al
                  WHERE al.file_id = $file_id AND al.job_id = attempts.job_id AND al.attempt_no = attempts.attempt_no);
