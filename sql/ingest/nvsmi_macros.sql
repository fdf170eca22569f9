-- Macros shared by the GPU telemetry formats (nvidia-smi CSV, dmon, XML; DCGM).
-- Values arrive as text, as the tools print them; these decide what is missing,
-- what is a number, and what is neither (a reject).

-- Every spelling of "no value" (gpucluster_analysis/missing_values.py): empty, any bracketed
-- text (nvidia-smi's way of saying why a value is missing: [N/A], [Not Supported], ...) or
-- one of the words $missing_words in any case (N/A, dmon's `-`, ...). DuckDB reads the
-- variable once per query, as a constant list.
SET VARIABLE gpu_missing_words = $missing_words;
CREATE OR REPLACE TEMP MACRO gpu_missing(v) AS (
    v IS NULL OR trim(v) = '' OR starts_with(trim(v), '[')
    OR list_contains(getvariable('gpu_missing_words'), lower(trim(v)))
);

-- A number with an optional unit, as nvidia-smi prints it with or without `nounits`
-- (`26 %`, `81559 MiB`, `433.78 W`, `1980 MHz`, `56`). The unit must be one of `units`,
-- the field's own: a `26 %` where memory is expected means the fields are not where the
-- header (or --columns) says, so it is NULL and the caller rejects the row rather than
-- store a wrong number. Only units that need no conversion are listed (dmon's MB are
-- MiB). A bare number first (the common case, and `nounits`); missing spellings are
-- never numbers; DuckDB would read `1_000` as 1000, nvidia-smi never prints it.
-- A value with a blank is split before any cast: a failed cast costs more than the split
-- (this macro runs on every value of billions of samples).
CREATE OR REPLACE TEMP MACRO gpu_number(v, units) AS (
    CASE WHEN contains(v, '_') THEN NULL
         WHEN NOT contains(v, ' ') THEN TRY_CAST(v AS DOUBLE)
         WHEN split_part(trim(v), ' ', 3) = '' AND list_contains(units, split_part(trim(v), ' ', 2))
             THEN TRY_CAST(split_part(trim(v), ' ', 1) AS DOUBLE)
         ELSE TRY_CAST(v AS DOUBLE)  -- a bare number with blanks around it
    END
);

-- PCI bus ids in the form that joins nvidia-smi and DCGM: lower case, last 12
-- characters (`00000000:3B:00.0` and `0000:3b:00.0` both become `0000:3b:00.0`).
CREATE OR REPLACE TEMP MACRO gpu_pci(v) AS (
    CASE WHEN gpu_missing(v) THEN NULL ELSE lower(right(trim(v), 12)) END
);

-- NVML clock throttle (event) reason bits to their names, comma-separated; `none` when no
-- bit is set; bits NVML had not defined when this was written are kept as a hex remainder.
CREATE OR REPLACE TEMP MACRO gpu_throttle_names(mask) AS (
    CASE
        WHEN mask IS NULL THEN NULL
        WHEN mask = 0 THEN 'none'
        ELSE concat_ws(',',
            CASE WHEN mask & 1 <> 0 THEN 'gpu_idle' END,
            CASE WHEN mask & 2 <> 0 THEN 'applications_clocks_setting' END,
            CASE WHEN mask & 4 <> 0 THEN 'sw_power_cap' END,
            CASE WHEN mask & 8 <> 0 THEN 'hw_slowdown' END,
            CASE WHEN mask & 16 <> 0 THEN 'sync_boost' END,
            CASE WHEN mask & 32 <> 0 THEN 'sw_thermal_slowdown' END,
            CASE WHEN mask & 64 <> 0 THEN 'hw_thermal_slowdown' END,
            CASE WHEN mask & 128 <> 0 THEN 'hw_power_brake_slowdown' END,
            CASE WHEN mask & 256 <> 0 THEN 'display_clock_setting' END,
            CASE WHEN mask >> 9 <> 0 THEN printf('0x%x', (mask >> 9) << 9) END)
    END
);

-- A reasons mask as printed: hex (`0x0000000000000004`, nvidia-smi) or decimal (DCGM).
CREATE OR REPLACE TEMP MACRO gpu_mask(v) AS (
    CASE WHEN gpu_missing(v) THEN NULL
         WHEN lower(trim(v)) LIKE '0x%' THEN TRY_CAST(trim(v) AS UBIGINT)
         ELSE TRY_CAST(TRY_CAST(trim(v) AS DOUBLE) AS UBIGINT)
    END
);
