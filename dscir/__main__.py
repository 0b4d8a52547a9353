"""``python -m dscir``: the command line (``dscir.cli.main``)."""

import sys

from dscir.cli import main

sys.exit(main())
