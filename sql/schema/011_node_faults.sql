-- Schema version 10: machine faults from node fault traces (issue #29, part 6): one row per fault
-- of a machine, from its start to its end when the trace gives it, with its cause in the trace's
-- own words at three levels (StepFun's Level, Class and Desc). The input of the reliability
-- analysis (issue #30). Idempotent: an older store is upgraded in place.
CREATE TABLE IF NOT EXISTS node_faults (
    source     VARCHAR NOT NULL,    -- the trace it came from: stepfun
    machine_id VARCHAR NOT NULL,
    started_at TIMESTAMP NOT NULL,  -- UTC; a trace of relative times counts from --epoch (default 1970-01-01)
    ended_at   TIMESTAMP,           -- NULL: the trace ends before the fault does
    level      VARCHAR,             -- e.g. Hardware Failure
    class      VARCHAR,             -- e.g. GPU
    reason     VARCHAR,             -- e.g. GPU xid Error
    line       INTEGER,             -- the line the fault's start begins on
    file_id    INTEGER NOT NULL
);

UPDATE schema_version SET version = getvariable('migration_version')
WHERE version < getvariable('migration_version');
