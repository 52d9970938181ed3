"""One module per scenario; each has ``KEY``, ``TITLE``, ``BASELINE`` and ``async run(ctx)``."""
