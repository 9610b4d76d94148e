"""What a report shows and holds, without pandas: its settings (ReportConfig, TableConfig, CurvesConfig) and a paper
table's cells and rows. `sweep run` and `sweep status` validate a spec's report section with it."""
