-- Macros the ingest scripts share. Created as temp macros on each ingest connection.

-- A Philly utilization time such as '2017-11-05 01:30:00 PST' to naive UTC.
-- The suffix carries the offset, which also settles the repeated fall-back hour.
CREATE OR REPLACE TEMP MACRO philly_util_time_utc(t) AS (
    try_strptime(substr(trim(t), 1, 19), '%Y-%m-%d %H:%M:%S')
    - to_hours(CASE upper(substr(trim(t), 21))
        WHEN 'PDT' THEN -7 WHEN 'PST' THEN -8
        WHEN 'MDT' THEN -6 WHEN 'MST' THEN -7
        WHEN 'CDT' THEN -5 WHEN 'CST' THEN -6
        WHEN 'EDT' THEN -4 WHEN 'EST' THEN -5
        WHEN 'UTC' THEN 0 WHEN 'GMT' THEN 0 WHEN 'Z' THEN 0
      END)
);
