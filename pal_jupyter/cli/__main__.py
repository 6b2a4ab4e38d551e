"""``python -m pal_jupyter.cli``: the same as the ``pal-jupyter`` command."""

import sys

from . import main

sys.exit(main())
