"""python -m coextra.stress: the stress demo (see coextra.stress)."""

import sys

from . import main

sys.exit(main())
