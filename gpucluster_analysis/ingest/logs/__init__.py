"""Job logs: each job's stdout/stderr, placed by path, classified and scanned for speed."""
