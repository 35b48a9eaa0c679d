"""ALiBi hints: a hint is a variant of the declaration that every call of the run matches, read
from the calls' own values (``posenc_spec.families.alibi.slips.diagnose``)."""

import numpy as np

from posenc_spec.families.alibi import oracle
from posenc_spec.families.alibi.conventions import AlibiConvention
from posenc_spec.families.alibi.grid import probes
from posenc_spec.families.alibi.slips import Reading, diagnose

HEADS = 12


def readings(make_row, signature="heads-length"):
    """Every call of one head count, each row ``make_row(slopes, keys, row, rows)`` as float32."""
    made = []
    for probe in probes(signature, AlibiConvention(), HEADS):
        if probe.role != "table":
            continue
        call, slopes, keys = probe.call, oracle.slopes(HEADS), np.arange(probe.call.k_len)
        rows = [make_row(slopes[:, None], keys[None, :], row, call.q_len) for row in range(call.q_len)]
        made.append(Reading(probe, np.stack(rows, axis=1).astype(np.float32), "float32"))
    return made


def slips(found):
    return [slip for hint in found for slip in hint.slips]


def test_one_key_row_for_every_query_is_named_by_a_variant_it_computes():
    """BLOOM's row, m k, broadcast over the queries and declared causal: the hint names the row
    constant the rows differ by, a variant every call matches."""
    found = diagnose(AlibiConvention(), readings(lambda m, k, row, rows: m * k), slopes_only=False)
    assert slips(found) == ["alibi-form"] and found[0].declare == (("up_to_row_constant", True),), found


def test_no_key_form_is_named_for_rows_that_differ():
    """Rows scaled by their query's index end in BLOOM's row m k: read as a key form (its last row)
    every call matches, but the rows differ at the keys they attend, so no hint names the key form."""
    found = diagnose(AlibiConvention(), readings(lambda m, k, row, rows: m * k * (row + 1) / rows),
                     slopes_only=False)
    assert ("bias_form", "key") not in [change for hint in found for change in hint.declare], found
