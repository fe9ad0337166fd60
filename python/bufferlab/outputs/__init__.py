"""What a run leaves behind, read and written: results loading, tables, report, comparison,
queue plots and traces, the part summaries' text, Flent export."""
