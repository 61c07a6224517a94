"""`python -m speceval`."""

from speceval.cli.exits import exit_process
from speceval.cli.main import main

exit_process(main())
