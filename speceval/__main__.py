"""`python -m speceval`."""

from speceval.cli.main import main

raise SystemExit(main())
