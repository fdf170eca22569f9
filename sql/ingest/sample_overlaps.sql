-- Where newly compared files may hold samples already stored: for each of them, the files of
-- its source kind before it (smaller file id: stored before it) whose span on a machine overlaps
-- its own (sample_spans), and the first and last time of those overlaps.
-- Parameters: $file_ids (the files compared now, their spans written), $kind.
-- Output: file_id, holders (file ids), from_at, to_at; only files with an overlap.

SELECT n.file_id,
       list(DISTINCT o.file_id ORDER BY o.file_id) AS holders,
       min(greatest(n.first_at, o.first_at)) AS from_at,
       max(least(n.last_at, o.last_at)) AS to_at
FROM sample_spans n
JOIN sample_spans o
  ON o.machine_id = n.machine_id AND o.source_kind = n.source_kind AND o.file_id < n.file_id
 AND o.first_at <= n.last_at AND n.first_at <= o.last_at
WHERE list_contains($file_ids, n.file_id) AND n.source_kind = $kind
GROUP BY n.file_id
ORDER BY n.file_id
