"""The child side and the channel: framing that refuses what does not add up, global state
named and restored, and the runner's timeout, deaths and restarts (results turned into
raw arrays: ``test_child_convert``)."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from posenc_spec.gate import sandbox
from posenc_spec.gate.calls import CallRequest
from posenc_spec.gate.child import confine_signals, state
from posenc_spec.gate.child.protocol import (
    MAX_HEADER_BYTES,
    PREFIX,
    ChannelClosed,
    ChannelError,
    ChannelTimeout,
    PayloadTooLarge,
    Reader,
    send,
)
from posenc_spec.gate.runner import Slot
from posenc_spec.gate.sandbox import Limits, root_template
from posenc_spec.gate.wire import read_outcome
from posenc_spec.text import describe_exception

HERE = Path(__file__).resolve()
TIMEOUT = 1.0


def sleeps_on_wide_tables(n, d):
    if d >= 64:
        time.sleep(3600)
    return np.zeros((n, d))


def dies_at_width_4(n, d):
    if d == 4:
        os._exit(7)
    return np.zeros((n, d))


def half(n, d):
    return np.full((n, d), 0.5)


def empty(n, d):
    return np.zeros((0, d))


# -- framing -------------------------------------------------------------------------------


@pytest.fixture
def pair():
    left, right = socket.socketpair()
    yield left, right
    left.close()
    right.close()


def test_a_message_round_trips_with_its_payloads(pair):
    left, right = pair
    send(left, {"op": "x", "n": 1}, [np.arange(3, dtype=np.float32), b""])
    header, payloads, _ = Reader(right).read(time.monotonic() + 1, max_payload=12)
    assert header == {"op": "x", "n": 1, "nbytes": [12, 0]}
    assert np.array_equal(np.frombuffer(payloads[0], np.float32), np.arange(3))


@pytest.mark.parametrize("raw, words", [
    (b"XXXX" + (5).to_bytes(4, "big") + b"hello", "bad frame prefix"),
    (PREFIX.pack(b"PSG1", MAX_HEADER_BYTES + 1), "a header of"),
    (PREFIX.pack(b"PSG1", 5) + b"hello", "header is not JSON"),
    (PREFIX.pack(b"PSG1", 2) + b"[]", "header is not an object"),
    (PREFIX.pack(b"PSG1", 10) + b'{"a": NaN}', "header is not JSON"),
    (PREFIX.pack(b"PSG1", 18) + b'{"nbytes": [-1]}  ', "bad payload sizes"),
])
def test_malformed_frames_are_channel_errors(pair, raw, words):
    """Nothing in a malformed message is trusted: a bad prefix, an oversized or non-JSON
    header, NaN, negative sizes are refused before anything else is read."""
    left, right = pair
    left.sendall(raw)
    with pytest.raises(ChannelError, match=words):
        Reader(right).read(time.monotonic() + 1, max_payload=100)


def test_payloads_beyond_the_budget_are_not_read(pair):
    left, right = pair
    left.sendall(PREFIX.pack(b"PSG1", 21) + b'{"nbytes": [1000000]}')
    with pytest.raises(PayloadTooLarge, match="1000000 bytes, more than the 100"):
        Reader(right).read(time.monotonic() + 1, max_payload=100)


def test_a_partial_reply_times_out_and_a_closed_channel_is_said(pair):
    """Half a frame then silence ends at the deadline, not in a hang; EOF is ChannelClosed."""
    left, right = pair
    left.sendall(PREFIX.pack(b"PSG1", 50) + b'{"op"')
    with pytest.raises(ChannelTimeout):
        Reader(right).read(time.monotonic() + 0.3, max_payload=0)
    left.close()
    with pytest.raises(ChannelClosed):
        Reader(right).read(time.monotonic() + 1, max_payload=0)


def test_replies_are_checked_against_the_request():
    """The parent reads arrays only as the request allows: the id, the dtype, the shape
    and the byte count must agree, or the reply is malformed."""
    request = CallRequest("50x8", (50, 8), (50, 8))
    good = {"op": "result", "id": 3, "status": "ok", "arrays": [{"dtype": "float32", "shape": [2, 2]}]}
    assert read_outcome(good, [bytearray(16)], request, 3).table.shape == (2, 2)
    for header, payloads, words in [
        ({**good, "id": 4}, [bytearray(16)], "not the answer to this call"),
        ({**good, "status": "passed"}, [bytearray(16)], "unknown status"),
        ({**good, "arrays": [{"dtype": "float32", "shape": [2, 3]}]}, [bytearray(16)], "byte count"),
        ({**good, "arrays": [{"dtype": "object", "shape": [2, 2]}]}, [bytearray(16)], "bad dtype"),
        ({**good, "arrays": [{"dtype": "float32", "shape": [-2, -2]}]}, [bytearray(16)], "bad shape"),
        ({**good, "status": "raised"}, [bytearray(16)], "data with a failed call"),
    ]:
        with pytest.raises(ChannelError, match=words):
            read_outcome(header, payloads, request, 3)
    complex_reply = {**good, "arrays": [{"dtype": "complex64", "shape": [2, 1]}]}
    assert read_outcome(complex_reply, [bytearray(16)], request, 3).status == "bad"


def test_describe_exception_is_one_line():
    assert describe_exception(ValueError("two\nlines")) == "raised ValueError: two lines"
    assert describe_exception(SystemExit(3)) == "called sys.exit(3)"


# -- global state ------------------------------------------------------------------------------


def test_state_changes_are_named_and_restored(monkeypatch):
    """Each change is named once and put back; a second look finds nothing."""
    import signal
    import warnings

    baseline = state.snapshot()
    try:
        torch.set_default_dtype(torch.float64)
        np.seterr(all="raise")
        warnings.simplefilter("error")
        monkeypatch.setenv("POSENC_STATE_PROBE", "1")
        signal.setitimer(signal.ITIMER_REAL, 100.0)
        changes = state.compare_and_restore(baseline)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    assert any(change.startswith("torch default dtype float32 -> float64") for change in changes), changes
    assert any(change.startswith("NumPy error state") for change in changes), changes
    assert any(change.startswith("warnings filters") for change in changes), changes
    assert any("POSENC_STATE_PROBE" in change for change in changes), changes
    assert any(change.startswith("interval timer") for change in changes), changes
    assert torch.get_default_dtype() == torch.float32 and state.compare_and_restore(baseline) == []


def test_generator_digests_tell_starting_states_apart():
    state.seed_generators("a")
    first = state.generator_digests()
    torch.rand(1)
    assert state.generator_digests()["torch's"] != first["torch's"]
    state.seed_generators("b")
    assert all(state.generator_digests()[name] != first[name] for name in first)


# -- the runner ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def root():
    with root_template() as template:
        yield template


def _requests(*sizes):
    return [CallRequest(f"{n}x{d}", (n, d), (n, d)) for n, d in sizes]


def test_a_hanging_call_is_killed_at_the_timeout(root):
    """The hung call is reported once the timeout passes, the later calls as not run; the
    slot then serves the next target."""
    slot = Slot(root, Limits(2**30, 16, TIMEOUT))
    try:
        run = slot.run(f"{HERE}:sleeps_on_wide_tables", _requests((8, 8), (8, 64), (8, 128)))
        assert [outcome.status for outcome in run.outcomes] == ["ok", "hung", "not-run"]
        assert run.outcomes[1].message == f"the call for 8x64 did not return within the {TIMEOUT:g} s timeout (killed)"
        assert slot.run(f"{HERE}:half", _requests((2, 2))).outcomes[0].ok
    finally:
        slot.close()


def test_empty_results_travel_and_the_child_serves_on(root):
    """An empty array (no rows) is sent back as it is, call after call: the child keeps serving
    (sending its payload once killed the child, and the next call failed with status 70)."""
    slot = Slot(root, Limits(2**30, 16, 10.0))
    try:
        run = slot.run(f"{HERE}:empty", _requests((8, 8), (8, 4), (8, 6)))
        assert [outcome.status for outcome in run.outcomes] == ["ok", "ok", "ok"], [o.message for o in run.outcomes]
        assert [outcome.table.shape for outcome in run.outcomes] == [(0, 8), (0, 4), (0, 6)]
    finally:
        slot.close()


def test_a_death_restarts_the_child_and_the_calls_go_on(root):
    slot = Slot(root, Limits(2**30, 16, 10.0))
    try:
        run = slot.run(f"{HERE}:dies_at_width_4", _requests((8, 8), (8, 4), (8, 6)))
        assert [outcome.status for outcome in run.outcomes] == ["ok", "died", "ok"]
        assert run.outcomes[1].message == "the process exited with status 7 (os._exit or a crash)"
    finally:
        slot.close()


def test_import_failures_are_reasons(root, tmp_path):
    (tmp_path / "broken.py").write_text("raise RuntimeError('no import for you')\n")
    slot = Slot(root, Limits(2**30, 16, 10.0))
    try:
        assert slot.run(f"{tmp_path / 'broken.py'}:fn", []).import_message == \
            "raised RuntimeError: no import for you"
        assert "has no attribute 'missing'" in slot.run(f"{HERE}:missing", []).import_message
    finally:
        slot.close()


def test_module_templates_share_an_import_between_targets_only(root, tmp_path):
    """Targets of one module share what importing it did, never what a call did."""
    (tmp_path / "shared.py").write_text(
        "import numpy as np\nIMPORTS = []\nIMPORTS.append(1)\nCALLS = []\n"
        "def first(n, d):\n    CALLS.append(1)\n    return np.full((n, d), float(len(IMPORTS) + 10 * len(CALLS)))\n"
        "second = first\n")
    slot = Slot(root, Limits(2**30, 16, 10.0))
    try:
        slot.share_module(f"{tmp_path / 'shared.py'}:first")
        values = [slot.run(f"{tmp_path / 'shared.py'}:{name}", _requests((1, 2))).outcomes[0].table[0, 0]
                  for name in ("first", "second")]
        assert values == [11.0, 11.0]  # one import each saw, one call each made
    finally:
        slot.close()


SECCOMP_FILTERS = (
    "import os\nimport numpy as np\nIMPORTED_IN = os.getpid()\n"
    "def first(n, d):\n"
    "    with open('/proc/self/status') as status:\n"
    "        filters = [line for line in status if line.startswith('Seccomp_filters:')][0].split()[1]\n"
    "    return np.full((n, d), float(os.getpid() == IMPORTED_IN) + 10 * int(filters))\n"
    "second = first\n")


@pytest.mark.skipif(not confine_signals.available(), reason="needs a seccomp filter: Linux on x86_64 or aarch64")
def test_with_the_signal_filter_each_target_imports_its_module_itself(root, tmp_path, monkeypatch):
    """Where a seccomp filter keeps the targets' signals (forced here, as on a kernel before
    Linux 6.12), no module template is shared: each target's own child imports the module,
    and carries the signal filter beside the socket filter."""
    monkeypatch.setenv(sandbox.SIGNAL_FILTER_SWITCH, "on")
    monkeypatch.setenv(sandbox.CONFINEMENT_SWITCH, "on")
    (tmp_path / "shared.py").write_text(SECCOMP_FILTERS)
    slot = Slot(root, Limits(2**30, 16, 10.0))
    try:
        slot.share_module(f"{tmp_path / 'shared.py'}:first")
        values = [slot.run(f"{tmp_path / 'shared.py'}:{name}", _requests((1, 2))).outcomes[0].table[0, 0]
                  for name in ("first", "second")]
        assert values == [21.0, 21.0]  # imported in its own process, two seccomp filters
    finally:
        slot.close()


def test_lanes_share_the_root_template_safely(root):
    """Two lanes forking from one root template at once both get their children."""
    results = []

    def lane():
        slot = Slot(root, Limits(2**30, 16, 10.0))
        try:
            results.append(slot.run(f"{HERE}:half", _requests((4, 4))).outcomes[0].ok)
        finally:
            slot.close()

    threads = [threading.Thread(target=lane) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [True, True, True]
