"""The `sweep` subcommands, one module each; sweeps/cli.py registers them. Shared options: options.py."""
