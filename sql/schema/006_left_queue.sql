-- Schema version 6: when a job that never ran left the queue. A job cancelled (or deleted)
-- while pending had no placement, so it has no attempt; the time it left the queue ends
-- its abandoned wait (sacct's row of such a job: Start None or = End, NodeList `None
-- assigned`). Idempotent: an older store is upgraded in place.

ALTER TABLE jobs ADD COLUMN IF NOT EXISTS left_queue_at TIMESTAMP;

UPDATE schema_version SET version = 6 WHERE version < 6;
