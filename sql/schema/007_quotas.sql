-- Schema version 7: what Slurm's accounting database says about limits (sacctmgr), and the
-- QOS each job ran under. Idempotent: an older store is upgraded in place.

-- The job's QOS (sacct QOS): a QOS's MaxTRESPU caps each user's GPUs in that QOS.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS qos VARCHAR;

-- GPU limits as sacctmgr prints them, one row per limit holder and snapshot file:
--   kind 'account'    an account association's GrpTRES (vc = account, user_name NULL): the VC's quota;
--   kind 'user'       a user association's GrpTRES (vc = account, user_name): that user's cap in the account;
--   kind 'qos_user'   a QOS's MaxTRESPU (qos): each user's cap in that QOS;
--   kind 'qos_group'  a QOS's GrpTRES (qos): all jobs of the QOS together (stored; the replay does not use it).
-- gpus: gres/gpu=N of the TRES (typed gres/gpu:<type>=N summed where no untyped count is
-- given); NULL when the TRES names no GPU (the holder has no GPU limit). Where several files
-- give the same (source, kind, vc, user_name, qos), the latest ingested one holds.
CREATE TABLE IF NOT EXISTS quotas (
    source    VARCHAR NOT NULL,     -- slurm
    kind      VARCHAR NOT NULL,
    vc        VARCHAR,
    user_name VARCHAR,
    qos       VARCHAR,
    gpus      DOUBLE,
    tres      VARCHAR,              -- the TRES text as written
    file_id   INTEGER NOT NULL,
    line      BIGINT
);

UPDATE schema_version SET version = getvariable('migration_version')
WHERE version < getvariable('migration_version');
