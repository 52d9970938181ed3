"""``make bench``: aophub against bare baselines measured in the same run.

Every scenario runs the hub as a separate process (``python -m aophub serve``) and a bare
Starlette/uvicorn (or raw SQLite, or bare connectrpc) baseline as another, drives both with the
same load generator in this process, and reports medians of repeated runs and the ratio
aophub / baseline. Absolute times on small shared machines are noise; the ratio is the figure.

Layout: :mod:`bench.run` is the entry point, :mod:`bench.scenarios` holds one module per
scenario, :mod:`bench.baselines` the bare servers, ``bench/results/`` the output.
"""
