"""Declaring how a target is called (``posenc_spec/gate/signatures.py``): every key checked
where it enters, one line naming it, whether it comes from TOML or from flags."""

from __future__ import annotations

import pytest

from posenc_spec.gate.child.adapters import adapt
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.signatures import parse_keyword_texts

TARGET = "pkg.mod:fn"
CONFIG = "spec_tests/data/rope_configs/llama3_1_8b.json"


def assert_refused(keys: dict, *words: str, flags: bool = False) -> None:
    """``declare(keys)`` is a usage error whose one line holds every word."""
    with pytest.raises(UsageError) as caught:
        declare({"target": TARGET, **keys}, flags=flags)
    message = str(caught.value)
    assert "\n" not in message and all(word in message for word in words), (keys, message)


def _target(*arguments):
    return arguments


def test_the_default_call_needs_no_adapting():
    """A target declared without signature, init or method is called as it is."""
    for keys in ({}, {"api": "timesteps"}, {"api": "rope-apply"}, {"api": "rope-cache", "cache_call": "length"}):
        declaration = declare({"target": TARGET, **keys})
        assert not declaration.calling.adapted and adapt(_target, declaration.how()) is _target, keys


def test_a_signature_of_another_api_is_named_with_the_nearest():
    """A signature the API does not have is refused naming the key and the near miss."""
    assert_refused({"api": "rope-apply", "signature": "q-k-cos-sn"}, "signature", "q-k-cos-sin")
    assert_refused({"signature": "q-k-cos-sin"}, "signature", "'q-k-cos-sin'")


def test_a_signature_that_splits_x_takes_only_the_layouts_it_knows():
    """q-k-cos-sin splits x by heads: an sbhd x is refused naming x_layout."""
    assert_refused({"api": "rope-apply", "signature": "q-k-cos-sin", "x_layout": "sbhd"}, "x_layout", "bhsd or bshd")
    assert_refused({"api": "rope-apply", "signature": "x-offset", "x_layout": "bshd"}, "x_layout", "bhsd")


def test_init_sizes_are_the_apis_own():
    """A placeholder names a size of the call; another API's size is refused."""
    declaration = declare({"target": TARGET, "api": "rope-apply", "init": {"dim": "{head_dim}", "base": 500000}})
    assert declaration.how()["init"] == {"base": 500000, "dim": "{head_dim}"}
    assert_refused({"init": {"d_model": "{head_dim}"}}, "init.d_model", "{num_positions}")
    assert_refused({"api": "rope-apply", "init": {"dim": "{dim}"}}, "init.dim", "{head_dim}")


def test_init_values_are_plain():
    """A table, a list or None as an argument's value is refused, as is an empty table."""
    assert_refused({"init": {"d_model": [1, 2]}}, "init.d_model")
    assert_refused({"init": {}}, "init")
    assert_refused({"init": 3}, "init")


def test_init_config_needs_a_model_config():
    """init = "config" builds Class(config=...) from model_config: refused without one, and
    for a sinusoidal API."""
    assert_refused({"api": "rope-cache", "init": "config"}, "init", "model_config")
    assert_refused({"init": "config"}, "init")
    declaration = declare({"target": TARGET, "api": "rope-cache", "cache_call": "x-positions", "init": "config",
                           "model_config": CONFIG})
    assert declaration.how()["init"] == "config" and declaration.how()["config"].endswith("llama3_1_8b.json")


def test_command_line_init_reads_as_typed():
    """--init KEY=VALUE: numbers and true/false are read as such, other text as words; a
    missing "=" or a key given twice is a usage error naming --init."""
    assert parse_keyword_texts(["dim={head_dim}", "base=10000", "scale=0.5", "cached=true", "name=rope"]) == {
        "dim": "{head_dim}", "base": 10000, "scale": 0.5, "cached": True, "name": "rope"}
    declaration = declare({"target": TARGET, "init": ["d_model={dim}"], "signature": "adds-to-x"}, flags=True)
    assert declaration.how()["init"] == {"d_model": "{dim}"}
    assert_refused({"init": ["d_model"]}, "--init", "KEY=VALUE", flags=True)
    assert_refused({"init": ["d_model={dim}", "d_model=8"]}, "--init", "'d_model' given twice", flags=True)


def test_method_is_a_name():
    """method names one attribute: a dotted path or an expression is refused."""
    assert_refused({"method": "a.b"}, "method")
    assert_refused({"method": "__import__('os')"}, "method")


def test_adds_to_x_takes_its_layout():
    """adds-to-x has x_layout sbd (the tutorial's), bsd or sd; x_layout means nothing to
    another table signature."""
    assert declare({"target": TARGET, "signature": "adds-to-x"}).how()["x_layout"] == "sbd"
    assert declare({"target": TARGET, "signature": "adds-to-x", "x_layout": "bsd"}).how()["x_layout"] == "bsd"
    assert_refused({"signature": "adds-to-x", "x_layout": "bshd"}, "x_layout", "sbd")
    assert_refused({"x_layout": "sbd"}, "x_layout", "adds-to-x")


def test_the_report_says_how_the_target_was_called():
    """A declaration that adapts the call says so in its report entry; one that does not
    keeps its entry as it was."""
    adapted = declare({"target": TARGET, "api": "rope-apply", "signature": "q-k-cos-sin", "x_layout": "bhsd"})
    assert adapted.as_dict()["signature"] == "q-k-cos-sin"
    assert "signature" not in declare({"target": TARGET}).as_dict()


def test_kwargs_are_passed_on_every_call():
    """kwargs holds keyword arguments for every call (a function's options), with the same
    sizes as init; --kwarg KEY=VALUE on the command line; a bad one is refused naming it."""
    declaration = declare({"target": TARGET, "api": "timesteps", "kwargs": {"flip_sin_to_cos": True,
                                                                          "downscale_freq_shift": 0}})
    assert declaration.calling.adapted and declaration.how()["kwargs"] == {"downscale_freq_shift": 0,
                                                                          "flip_sin_to_cos": True}
    flagged = declare({"target": TARGET, "kwargs": ["scale={dim}"]}, flags=True)
    assert flagged.how()["kwargs"] == {"scale": "{dim}"}
    assert_refused({"kwargs": {"scale": [1]}}, "kwargs.scale")
    assert_refused({"kwargs": ["scale"]}, "--kwarg", "KEY=VALUE", flags=True)
    assert_refused({"api": "rope-apply", "kwargs": {"n": "{dim}"}}, "kwargs.n", "{head_dim}")
