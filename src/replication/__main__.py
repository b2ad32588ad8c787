"""`python -m replication <verb>`: the study's command line (replication/cli/main.py)."""
from replication.cli.main import main

raise SystemExit(main())
