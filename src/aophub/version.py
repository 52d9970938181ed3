"""The hub's version, read from the installed distribution."""

from importlib import metadata

__all__ = ["VERSION"]

try:
    VERSION = metadata.version("aophub")
except metadata.PackageNotFoundError:  # running from a source tree without an install
    VERSION = "0.0.0+source"
