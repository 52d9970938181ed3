"""Moved to examples/python/client.py (same options, plus --cursor and --approve); this path keeps working.

python examples/acp/client.py --server http://127.0.0.1:8080 --token KEY --node local -p "hello"
"""

from __future__ import annotations

import runpy
from pathlib import Path

if __name__ == "__main__":
    runpy.run_path(str(Path(__file__).resolve().parents[1] / "python" / "client.py"), run_name="__main__")
