"""benchmarks/corpus_reports.py compares the reports of two checkouts, and recordings of its
earlier version (keyed by the entry's id alone, with the checkout's folder written out)."""

from __future__ import annotations

import collections
import importlib.util
import json
from pathlib import Path

from meta_tests.corpus.every import every_corpus

ROOT = Path(__file__).resolve().parents[1]


def _corpus_reports():
    spec = importlib.util.spec_from_file_location("corpus_reports", ROOT / "benchmarks" / "corpus_reports.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_recording_by_id_compares_every_entry_whose_id_no_other_corpus_uses():
    """Keyed by id, each entry whose id is its own is compared with its recorded report; an id
    that several corpora use is left out of both sides and counted, never compared with
    whichever corpus's report the recording kept."""
    entries = [entry for _, corpus, _ in every_corpus() for entry in corpus]
    uses = collections.Counter(entry.id for entry in entries)
    made = {entry.target: f"report of {entry.target}" for entry in entries}
    recorded = {entry.id: f"report of {entry.target}" for entry in entries}  # the last of a shared id wins
    kept, recorded_kept, left_out = _corpus_reports().keyed_by_id(made, recorded)
    assert kept == recorded_kept == {entry.id: f"report of {entry.target}" for entry in entries if uses[entry.id] == 1}
    assert left_out == sum(count for count in uses.values() if count > 1)


def test_a_recorded_checkout_folder_reads_as_the_placeholder(tmp_path):
    """A report recorded with its checkout's folder in it (an entry's file, a traceback) reads
    with that folder written ``<checkout>``, as this checkout's reports are made, wherever each
    checkout lies; a recording keyed by target is not read as one keyed by id."""
    corpus_reports = _corpus_reports()
    report = json.dumps({"location": {"file": "/elsewhere/old/meta_tests/corpus/wrong.py", "line": 3},
                         "message": 'File "/elsewhere/old/meta_tests/corpus/wrong.py", line 9'}, indent=1)
    by_id_file, by_target_file = tmp_path / "by_id.jsonl", tmp_path / "by_target.jsonl"
    by_id_file.write_text(json.dumps({"id": "swapped_sin_cos", "report": report}) + "\n")
    by_target_file.write_text(json.dumps({"target": "pkg.mod:swapped_sin_cos", "report": report}) + "\n")
    recorded, by_id = corpus_reports.read_recording(str(by_id_file))
    assert by_id and "/elsewhere/old" not in recorded["swapped_sin_cos"]
    assert recorded["swapped_sin_cos"] == report.replace("/elsewhere/old", corpus_reports.CHECKOUT)
    assert corpus_reports.read_recording(str(by_target_file))[1] is False
