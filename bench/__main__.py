"""``python -m bench [B1 B2 ...] [--quick]``: see :mod:`bench.run`."""

from bench.run import main

raise SystemExit(main())
