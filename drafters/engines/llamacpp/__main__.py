"""``python -m drafters.engines.llamacpp export ...``: the GGUF export command (``gguf.main``)."""

import sys

from drafters.engines.llamacpp.gguf import main

sys.exit(main())
