"""Every corpus, for the scripts that run them all (``benchmarks/mutation_score.py``,
``benchmarks/corpus_reports.py``): ``(name, entries, bug classes)``, one per corpus, in the
order they were written. Each entry has ``id``, ``kind`` (wrong or correct), ``target``,
``bug_classes``, ``description``, ``seen_in``, ``describe()``, ``config_table()`` and
``declaration()``."""

from __future__ import annotations


def every_corpus() -> list[tuple[str, tuple, dict]]:
    from . import BUG_CLASSES, ENTRIES
    from .alibi_registry import ALIBI_BUG_CLASSES, ALIBI_ENTRIES
    from .mrope_registry import MROPE_BUG_CLASSES, MROPE_ENTRIES
    from .rope_registry import ROPE_BUG_CLASSES, ROPE_ENTRIES
    from .sincos2d_registry import BUG_CLASSES as SINCOS2D_BUG_CLASSES
    from .sincos2d_registry import ENTRIES as SINCOS2D_ENTRIES
    from .stateful_registry import STATEFUL_BUG_CLASSES, STATEFUL_ENTRIES
    from .t5buckets_registry import T5_BUG_CLASSES, T5_ENTRIES

    return [("sinusoidal", tuple(ENTRIES), BUG_CLASSES), ("rope", tuple(ROPE_ENTRIES), ROPE_BUG_CLASSES),
            ("stateful", tuple(STATEFUL_ENTRIES), STATEFUL_BUG_CLASSES),
            ("sincos2d", tuple(SINCOS2D_ENTRIES), SINCOS2D_BUG_CLASSES),
            ("t5buckets", tuple(T5_ENTRIES), T5_BUG_CLASSES), ("alibi", tuple(ALIBI_ENTRIES), ALIBI_BUG_CLASSES),
            ("mrope", tuple(MROPE_ENTRIES), MROPE_BUG_CLASSES)]
