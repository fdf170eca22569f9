-- Schema version 9: what identifies a telemetry sample (issue #26, part 3). A sample is its
-- source kind (the tool that measured: nvidia-smi, dcgm, philly-gpu, ...; from the file's
-- format, docs/schema.md), machine, GPU (and MIG instance) and time, not the bytes of the file
-- it came in: the same samples read again (a .gz or CRLF copy, logs that overlap) are stored
-- once. Idempotent: an older store is upgraded in place.

-- Where each file's samples lie, per machine: the small summary a new file is compared with,
-- so that samples are compared one by one only where two files' spans overlap. Written when a
-- file is compared with the files of its kind before it (ingest/samples.py), which is when its
-- kind has another file: the first file of a kind in a store, such as one trace's 460M-row GPU
-- file, is never compared with anything and costs nothing. A file without spans that holds
-- rows is one not compared yet; an older store's are compared at its next ingest.
CREATE TABLE IF NOT EXISTS sample_spans (
    source_kind VARCHAR NOT NULL,
    machine_id  VARCHAR NOT NULL,
    first_at    TIMESTAMP NOT NULL,  -- the file's first and last sample time on the machine
    last_at     TIMESTAMP NOT NULL,
    samples     BIGINT NOT NULL,     -- its rows there (gpu_samples, gpu_sample_details, host_samples), stored or set aside
    file_id     INTEGER NOT NULL
);

-- A file's samples that another file's row already stands for: never read by a report, kept so
-- that taking that other file back (--replace) hands each sample to the next file that has it.
-- The columns of the table they duplicate.
CREATE TABLE IF NOT EXISTS gpu_samples_duplicates AS SELECT * FROM gpu_samples LIMIT 0;
CREATE TABLE IF NOT EXISTS gpu_sample_details_duplicates AS SELECT * FROM gpu_sample_details LIMIT 0;
CREATE TABLE IF NOT EXISTS host_samples_duplicates AS SELECT * FROM host_samples LIMIT 0;

UPDATE schema_version SET version = getvariable('migration_version')
WHERE version < getvariable('migration_version');
