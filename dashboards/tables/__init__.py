"""Paper tables: what they hold, how they are built from a sweep or a file, rendered (Markdown, LaTeX, HTML, CSV, terminal)."""
