"""`python -m dashboards --smoke [--keep]`: see dashboards/smoke.py."""

from dashboards.smoke import main

raise SystemExit(main())
