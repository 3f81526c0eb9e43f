"""``python -m drafters.train`` and ``torchrun -m drafters.train``: see drafters.train.cli."""

import sys

from drafters.train.cli import main

sys.exit(main())
