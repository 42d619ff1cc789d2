"""``python -m readplan`` runs the command line."""

import sys

from readplan.cli import main

sys.exit(main())
