"""What every corpus entry shares: the target it names, the function behind it and the gate's
declaration of it. Each registry's entry is a frozen dataclass with ``id``, ``module`` and
``config_table()`` (the entry as one ``[[targets]]`` table) that derives from this."""

from __future__ import annotations

import importlib


class CorpusEntry:
    id: str
    module: str

    @property
    def target(self) -> str:
        return f"{self.module}:{self.id}"

    def function(self):
        """The registered function or class itself."""
        return getattr(importlib.import_module(self.module), self.id)

    def config_table(self) -> dict:
        raise NotImplementedError

    def declaration(self):
        """The gate's declaration of this entry, exactly as ``check --config`` reads it."""
        from posenc_spec.gate.declaration import declare

        return declare(self.config_table())
