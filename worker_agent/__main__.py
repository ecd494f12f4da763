"""``python -m worker_agent``: the same as ``mkagent`` (for child processes started with sys.executable)."""

import sys

from .main import main

sys.exit(main())
