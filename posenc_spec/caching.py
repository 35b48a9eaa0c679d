"""A cache of arrays bounded by their bytes, shared by the families' expectations: the gate
checks many targets on one grid (its lanes are threads), and one expected table can take
tens of megabytes."""

from __future__ import annotations

import collections
import threading


class BoundedCache:
    """The most recently used values, up to ``budget`` bytes in all; a value of more than
    ``budget`` bytes is made for its caller and never kept. A value asked for while another
    thread makes it is waited for, not made twice: two lanes checking targets of one
    convention ask for the same expected tables at the same time."""

    def __init__(self, budget: int):
        self.budget, self.used = budget, 0
        self.values: collections.OrderedDict = collections.OrderedDict()  # key -> (value, size)
        self.making: dict = {}  # key -> an Event set once the thread making it is done
        self.lock = threading.Lock()

    def get(self, key, make):
        """The value kept under ``key``, else ``make()``'s ``(value, size)``, kept when it fits."""
        while True:
            with self.lock:
                if key in self.values:
                    self.values.move_to_end(key)
                    return self.values[key][0]
                made = self.making.get(key)
                if made is None:
                    made = self.making[key] = threading.Event()
                    break
            made.wait()  # then kept, or not (too large, or its maker raised): asked again
        try:
            value, size = make()
            if size <= self.budget:
                self._keep(key, value, size)
            return value
        finally:
            with self.lock:
                del self.making[key]
            made.set()

    def _keep(self, key, value, size: int) -> None:
        with self.lock:
            self.values[key] = (value, size)
            self.used += size
            while self.used > self.budget and len(self.values) > 1:
                _, (_, dropped) = self.values.popitem(last=False)
                self.used -= dropped
