"""The views: which rows and columns a report shows (the metric table, the CPU scores, the sweep,
the app cycle's tables, `--times`, a history's series), as grids of cell text that every format
draws alike (`grids.report_grids`), and the cells' wording (`cells`). A view imports no format
(a contract in pyproject.toml says so). Nothing is imported here."""
