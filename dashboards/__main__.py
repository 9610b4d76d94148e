"""`python -m dashboards --smoke [--keep]`: see dashboards/report/smoke.py."""

from dashboards.report.smoke import main

raise SystemExit(main())
