-- Macros every connection to a store gets (db/connect.open_store), for ingest and report alike.

-- A reject's reason with the row's own values masked, so that reasons group by kind:
-- a word that starts with a number, or that is one of the row's fields (a pod name, a
-- value), becomes `…` (brackets and punctuation around it are kept).
-- `7 fields where the header has 11` -> `… fields where the header has …`.
CREATE OR REPLACE TEMP MACRO reason_kind(reason, row_text) AS (
    array_to_string(list_transform(string_split(reason, ' '), lambda w:
        CASE WHEN regexp_matches(w, '^[(''"]*[-+]?[0-9]')
               OR (length(w) > 1 AND list_contains(
                       regexp_split_to_array(coalesce(row_text, ''), '[,|;\s]+'),
                       regexp_replace(w, '^[(''"]+|[)''",:;.]+$', '', 'g')))
             THEN regexp_replace(w, '^([(''"]*).*?([)''",:;.]*)$', '\1…\2')
             ELSE w END), ' ')
);
