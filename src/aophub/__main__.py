"""``python -m aophub``: the command line."""

import sys

from aophub.cli import main

sys.exit(main())
