"""Bare servers the hub is compared with, each run as its own process.

Every module is runnable (``python -m bench.baselines.<name> --help``); the servers print
``listening on http://127.0.0.1:PORT`` like ``aophub serve`` and run on the same stack
(Starlette on uvicorn, same frame size limit, per-message deflate left at uvicorn's default),
doing the least work that moves the same frames.
"""
