"""`sweep report`: its settings, its sections (aggregates, grid, compute curves), the HTML and files it writes, the smoke run."""
