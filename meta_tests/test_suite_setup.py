"""The suite's own set-up in conftest.py stays true of the test files."""

from __future__ import annotations

import re
from pathlib import Path

import conftest

ROOT = Path(__file__).resolve().parents[1]
# What makes a file pay for transformers' model code: importing it, preloading it in the
# gate, or loading a model through posenc_spec.pretrained.
USES_TRANSFORMERS = re.compile(r"^\s*(import transformers|from transformers)|TRANSFORMERS_PRELOAD"
                               r"|pretrained\.(minilm_model|minilm_position_table|load_pretrained)\(", re.MULTILINE)


def test_the_files_kept_on_one_worker_are_those_that_import_transformers():
    """conftest.TRANSFORMERS_FILES names every test file that imports transformers, preloads
    it in the gate or loads a model with it, and no other: a file missed pays the import on
    a second worker."""
    this_file = Path(__file__).resolve()  # it holds the pattern, not an import
    files = {path.relative_to(ROOT).as_posix() for folder in ("spec_tests", "meta_tests")
             for path in (ROOT / folder).rglob("test_*.py")
             if path != this_file and USES_TRANSFORMERS.search(path.read_text())}
    assert files == conftest.TRANSFORMERS_FILES, (
        f"missing from conftest.TRANSFORMERS_FILES: {sorted(files - conftest.TRANSFORMERS_FILES)}; "
        f"listed but not importing transformers: {sorted(conftest.TRANSFORMERS_FILES - files)}")


def test_recorded_durations_name_test_files_that_exist():
    """benchmarks/suite_durations.json, which orders the files for pytest-xdist, parses into
    seconds and names only test files that exist: a renamed file is re-recorded, not ignored."""
    seconds = conftest.recorded_seconds()
    assert seconds, f"{conftest.FILE_SECONDS} is missing or not a JSON object of seconds per file"
    stale = sorted(name for name in seconds if not (ROOT / name).is_file())
    assert not stale, f"recorded but not there (python benchmarks/bench_suite.py --record): {stale}"
    assert all(value >= 0 for value in seconds.values()), seconds
