"""`python -m gpusim.cli ...`: the `gpusim` command."""
import sys

from gpusim.cli import main

sys.exit(main())
