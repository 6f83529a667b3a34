"""`python -m orrery` is the `orrery` command."""

import sys

from orrery.cli import main

sys.exit(main())
