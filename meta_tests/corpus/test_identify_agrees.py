"""``identify`` agrees with ``check`` in every family, on corpus entries correct and wrong.

For each entry of a small sample per family (the correct entries ``check`` notes something
for, and a few of the rest spread over each corpus: identify runs ``check``'s whole grid, so
the sample is what keeps this cheap), ``identify`` is asked as a user asks it (the entry's keys that say how
the target is called, as flags) and ``check`` judges the entry under its own declaration:

- where ``check`` accepts the entry (notes or none), ``identify`` answers a member, never
  "none", and says ``check`` accepts it;
- where ``identify``'s answer (or, for "none", its nearest) is the declared member, its
  verdict is ``check``'s: "check accepts it" exactly where ``check`` conforms, with the notes
  ``check`` gives.
"""

from __future__ import annotations

from meta_tests.corpus import CORRECT, WRONG
from meta_tests.corpus.rope_registry import ROPE_CORRECT, ROPE_WRONG
from meta_tests.corpus.sincos2d_registry import ENTRIES as SINCOS2D_ENTRIES
from meta_tests.corpus.t5buckets_registry import T5_CORRECT, T5_WRONG
from posenc_spec import registry
from posenc_spec.families.sincos2d.keys import CALL_KEYS as SINCOS2D_CALL_KEYS
from posenc_spec.gate.declaration import declare, renamed
from spec_tests.assertions import check_named, failure_summary

CALL_KEYS = ("target", "api", "t_max", "max_positions", "timeout")
# A sincos2d entry identify can call: no keys of how it is called beyond fn(height, width, dim).
_PLAIN_SINCOS2D_KEYS = {*CALL_KEYS, *(set(registry.names_of_api("sincos2d").keys) - set(SINCOS2D_CALL_KEYS))}
PER_KIND = 3  # entries of each kind, spread evenly over the corpus's order


def _spread(entries) -> list:
    return list(entries[::max(1, len(entries) // PER_KIND)])[:PER_KIND]


def _sample(correct, wrong, noted=()) -> list:
    picked = [entry for entry in correct if entry.id in noted] + _spread(correct) + _spread(wrong)
    return list({entry.id: entry for entry in picked}.values())


def _table(entry) -> dict:
    """The entry's keys as a declaration reads them: a former name as the key it is now."""
    table = entry.config_table()
    return renamed(table, registry.names_of_api(table.get("api", registry.apis()[0])))


def _request(entry, extra: dict):
    """What ``posenc-spec identify`` asks of ``entry`` given its calling keys (and ``extra``) as flags."""
    table = _table(entry)
    call = declare({key: table[key] for key in CALL_KEYS if key in table}, flags=True)
    flags = {key: table[key] for key in registry.names_of_api(table["api"]).identify_keys if key in table}
    return call.family.identify_request({**flags, **extra}, call)


def _t5_settings(entry) -> dict:
    """A T5 function that takes its settings is called with the declared ones."""
    convention = entry.convention()
    return {"bidirectional": convention.bidirectional, "num_buckets": convention.num_buckets,
            "max_distance": convention.max_distance}


def assert_identify_agrees_with_check(entries, extra=lambda entry: {}) -> None:
    assert {entry.kind for entry in entries} == {"correct", "wrong"}, [entry.id for entry in entries]
    reports = check_named({entry.id: entry.declaration() for entry in entries})
    for entry in entries:
        report, request = reports[entry.id], _request(entry, extra(entry))
        answer = request.run(None)
        said = f"{entry.id} ({entry.kind}): identify said {answer['message']!r}; check: {failure_summary(report)}"
        noted = [check.name for check in report.checks if check.status == "noted"]
        if report.conforms:
            assert answer["name"] != "none" and answer.get("check") == "conforms", said
        member = answer["convention"] or (answer.get("nearest") or {}).get("convention")
        if member is None or request.differences(member, entry.declaration()):
            continue  # another member than the declared one: check judged a declaration the user did not write
        assert (answer.get("check") == "conforms") == report.conforms, said
        if report.conforms:
            assert [note["id"] for note in answer["notes"]] == noted, said


def test_sinusoidal_identify_agrees_with_check():
    """Sinusoidal tables and timestep embeddings, the DDPM embedding that refuses bfloat16 among them."""
    assert_identify_agrees_with_check(_sample(CORRECT, WRONG, noted=("ddpm_numpy_timestep_embedding",)))


def test_rope_identify_agrees_with_check():
    """Rotary frequencies, caches and rotations."""
    assert_identify_agrees_with_check(_sample(ROPE_CORRECT, ROPE_WRONG))


def test_sincos2d_identify_agrees_with_check():
    """2-D sincos tables called fn(height, width, dim), the one form identify calls."""
    plain = [entry for entry in SINCOS2D_ENTRIES if set(_table(entry)) <= _PLAIN_SINCOS2D_KEYS]
    assert_identify_agrees_with_check(_sample([entry for entry in plain if entry.kind == "correct"],
                                              [entry for entry in plain if entry.kind == "wrong"]))


def test_t5buckets_identify_agrees_with_check():
    """T5 buckets, the copies of transformers' code noted at -2**(b-1) among them."""
    noted = ("transformers_copy_encoder", "transformers_copy_decoder", "transformers_copy_guarded")
    assert_identify_agrees_with_check(_sample(T5_CORRECT, T5_WRONG, noted), extra=_t5_settings)
