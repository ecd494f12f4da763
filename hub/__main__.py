"""``python -m hub``: the same as ``mkhub``."""

import sys

from .cli import main

sys.exit(main())
