-- Schema version 11: the job's user id where the scheduler's dump gives it (sacct's UID), to
-- tell a cancel by the job's own user (`CANCELLED by <uid>` of that uid) from one by root or
-- another account (issue #28, part 4). Idempotent: an older store is upgraded in place.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS user_uid VARCHAR;  -- as printed, e.g. 1000

UPDATE schema_version SET version = getvariable('migration_version')
WHERE version < getvariable('migration_version');
