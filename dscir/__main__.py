import sys

from dscir.cli import main

sys.exit(main())
