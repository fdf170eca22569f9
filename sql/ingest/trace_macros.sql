-- Macros shared by the Helios/Acme (helios_acme_jobs.sql) and Alibaba (alibaba_pods.sql)
-- readers. Each line is read whole, so that every row keeps its own line number and a
-- malformed one is rejected alone; a line without a double quote is split at commas, one
-- with a double quote by a CSV-aware pattern (quoted fields may hold commas, "" is a quote).

-- A field as stored: trimmed, and NULL for the spellings of "no value".
CREATE OR REPLACE TEMP MACRO trace_value(f) AS (
    CASE WHEN trim(f) IN ('', 'NA', 'N/A', 'None', 'none', 'nan', 'NaN', 'NaT', 'null', 'NULL', 'Unknown')
         THEN NULL ELSE trim(f) END
);

-- The data lines of a trace CSV (after the header; blank lines and repeated headers
-- skipped): line (1-based), text, fields (trace_value of each).
CREATE OR REPLACE TEMP MACRO trace_lines(file_path, separator, text_encoding, line_limit, header_line) AS TABLE
SELECT line, text,
       list_transform(
           CASE WHEN contains(text, '"')
                THEN list_transform(regexp_extract_all(text, '(?:^|,)("(?:[^"]|"")*"|[^,]*)', 1),
                                    lambda f: CASE WHEN f LIKE '"%"' THEN replace(f[2:-2], '""', '"') ELSE f END)
                ELSE string_split(text, ',') END,
           lambda f: trace_value(f)) AS fields
FROM (SELECT ordinality AS line, text
      FROM read_csv(file_path, header = false, columns = {'text': 'VARCHAR'}, delim = separator, quote = '',
                    escape = '', auto_detect = false, encoding = text_encoding,
                    max_line_size = line_limit) WITH ORDINALITY)
WHERE line > 1 AND text IS NOT NULL AND trim(text) <> '' AND text <> header_line;
