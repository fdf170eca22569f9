"""The query pipeline: from a store (or a Parquet dataset) to the numbers a report shows.

`catalog` reads the named queries of `sql/queries/` and their headers and orders them by
stage and by what they read; `selection` narrows a report to the jobs it covers; `prepare`
builds the temp tables the queries join, with the replay of the queue beside them; `kept`
keeps the heaviest results in the store at ingest; `compute` runs it all for one selection
and returns its results; `statistics` holds the tests and summaries behind the sentences;
`parameters` the values the queries are bound to. Nothing here draws, renders or writes a
report: that is report/, which imports this package, never the other way round.
"""
