"""A sweep spec: its YAML read safely, presets composed, variants and seeds expanded into trials, every section validated."""
