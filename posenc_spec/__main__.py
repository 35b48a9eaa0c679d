"""``python -m posenc_spec``: the ``posenc-spec`` command."""

import sys

from posenc_spec.cli import console_main

sys.exit(console_main())
