"""A cache of arrays bounded by their bytes, shared by the families' expectations: the gate
checks many targets on one grid (its lanes are threads), and one expected table can take
tens of megabytes."""

from __future__ import annotations

import collections
import threading


class BoundedCache:
    """The most recently used values, up to ``budget`` bytes in all; a value of more than
    ``largest`` bytes is made for its caller and never kept (it would push out every small one
    that the next target asks for again)."""

    def __init__(self, budget: int, largest: int | None = None):
        self.budget, self.largest, self.used = budget, budget if largest is None else largest, 0
        self.values: collections.OrderedDict = collections.OrderedDict()  # key -> (value, size)
        self.lock = threading.Lock()

    def get(self, key, make):
        """The value kept under ``key``, else ``make()``'s ``(value, size)``, kept when small enough."""
        with self.lock:
            if key in self.values:
                self.values.move_to_end(key)
                return self.values[key][0]
        value, size = make()
        if size > self.largest:
            return value
        with self.lock:
            if key not in self.values:
                self.values[key] = (value, size)
                self.used += size
            while self.used > self.budget and len(self.values) > 1:
                _, (_, dropped) = self.values.popitem(last=False)
                self.used -= dropped
        return value
