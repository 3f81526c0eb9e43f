"""Fourth held-out measurement of the general ingestion path (report: docs/heldout-formats-4.md): the files in
benchmarks/data/heldout_formats_4/files (provenance: benchmarks/data/heldout_formats_4/SOURCES.md), counted by hand
by benchmarks/data/heldout_formats_4/hand_count.py (standard library, does not import tracedraft).

Same comparison and classes as benchmarks/heldout_formats.py (whose default data directory is unchanged); only
the data directory differs. Run: ``python benchmarks/heldout_formats_4.py`` (uses .venv/bin/tracedraft).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import heldout_formats

heldout_formats.DATA = heldout_formats.ROOT / "benchmarks" / "data" / "heldout_formats_4"

if __name__ == "__main__":
    sys.exit(heldout_formats.main())
