"""`python -m dashboards [--smoke | report ... | table ...]`: see dashboards/cli.py."""

from dashboards.cli import main

main()
