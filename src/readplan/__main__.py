"""``python -m readplan`` runs the command line."""

import sys

from readplan.cli.main import main

sys.exit(main())
