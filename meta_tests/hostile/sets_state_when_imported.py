"""Imported by ``global_state.imports_its_neighbour`` on its first call: sets ``POSENC_HOSTILE``."""

import os

os.environ["POSENC_HOSTILE"] = "1"
