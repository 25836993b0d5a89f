"""The formats: each draws the report model in a view as one kind of text (a terminal table,
Markdown, CSV, JSON, hyperfine's and Google Benchmark's JSON, benchstat's layout, an HTML page).
A format decides how a cell reads in its medium, never which rows and columns a view has
(`report.views`); `report.renderers` names each format's `render`. Nothing is imported here."""
