"""Reports: named queries -> tables (polars) -> figures (plotly) -> one offline HTML file + CSVs."""
