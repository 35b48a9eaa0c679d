"""Files a user names, read defensively (posenc_spec.gate.user_files): a --config file, a
pyproject.toml the search meets, an --xfails file and a --model-config file that are a FIFO,
a device, a folder, too big, nested too deep, binary, missing or unreadable each give exit 2
and one line naming the file, never a hang, an exhausted memory or an internal error."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from meta_tests.guards import hang_guard
from posenc_spec.cli import main
from posenc_spec.families.rope.config import MAX_CONFIG_BYTES as MAX_ROPE_CONFIG_BYTES
from posenc_spec.gate.config import MAX_CONFIG_BYTES
from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.user_files import MAX_DEPTH, data_depth, json_nesting, read_json, read_toml, toml_nesting
from posenc_spec.gate.xfails import MAX_XFAILS_BYTES

TARGET = "reference_impls.torch_impl:positional_encoding"
DEEP_TOML = "a = " + "[" * 100_000 + "]" * 100_000 + "\n"
DEEP_JSON = "[" * 100_000 + "]" * 100_000

# Each reader: how the command line names the file, what the messages call it, its size cap,
# and the text that nests too deep in its syntax (None: the xfails syntax has no nesting).
READERS = {
    "config": (lambda path: ["check", "--config", str(path)], "configuration file", MAX_CONFIG_BYTES, DEEP_TOML),
    "pyproject": (None, "configuration file", MAX_CONFIG_BYTES, "[tool.posenc-spec]\n" + DEEP_TOML),
    "xfails": (lambda path: ["check", TARGET, "--xfails", str(path)], "xfails file", MAX_XFAILS_BYTES, None),
    "rope-config": (lambda path: ["check", "pkg.mod:fn", "--api", "rope-freqs", "--model-config", str(path)],
                    "Hugging Face config", MAX_ROPE_CONFIG_BYTES, DEEP_JSON),
}


def _hostile(kind: str, folder, cap: int, deep: str | None):
    """The hostile file of ``kind`` for a reader whose size cap is ``cap`` and whose syntax
    nests too deep in ``deep``."""
    path = folder / "hostile"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        return "/dev/zero"
    elif kind == "folder":
        path.mkdir()
    elif kind == "huge":
        with open(path, "wb") as handle:
            handle.truncate(cap + 1)  # sparse: no disk is written
    elif kind == "deep":
        path.write_text(deep)
    elif kind == "binary":
        path.write_bytes(b"ok = 1\n" + bytes(range(128, 256)) * 4)
    elif kind == "unreadable":
        path.write_text("x = 1\n")
        path.chmod(0)
    return path


EXPECTED = {
    "fifo": "{path}: the {what} is a FIFO, not a regular file",
    "device": "{path}: the {what} is a character device, not a regular file",
    "folder": "{path}: the {what} is a directory, not a regular file",
    "huge": "{path}: a {what} of more than {cap} bytes",
    "deep": "{path}: nested more than 64 levels deep",
    "binary": "{path}, line 2: not UTF-8 text",
    "missing": "cannot read the {what} {path}: No such file or directory",
    "unreadable": "cannot read the {what} {path}: Permission denied",
}


def assert_usage_error_naming(argv, expected: str, capsys) -> None:
    """``main(argv)`` exits 2 within the hang guard, with one line on stderr holding ``expected``."""
    with hang_guard():
        status = main(argv)
    error = capsys.readouterr().err
    assert status == 2 and error.count("\n") == 1 and expected in error, (argv, status, error)
    assert "internal error" not in error and "Traceback" not in error, error


@pytest.mark.parametrize("reader, kind", [(reader, kind) for reader in READERS for kind in EXPECTED
                                          if kind != "deep" or READERS[reader][3] is not None])
def test_a_hostile_file_is_one_line_naming_it(tmp_path, monkeypatch, capsys, reader, kind):
    """Every reader refuses every kind of hostile file in one line naming the file and why."""
    if kind == "unreadable" and os.geteuid() == 0:
        pytest.skip("root reads a file whatever its mode: chmod 000 does not make it unreadable")
    command, what, cap, deep = READERS[reader]
    path = _hostile(kind, tmp_path, cap, deep) if kind != "missing" else tmp_path / "absent"
    if reader == "pyproject":
        repository = tmp_path / "repository"
        (repository / ".git").mkdir(parents=True)
        (repository / "pyproject.toml").symlink_to(path)
        monkeypatch.chdir(repository)
        argv, named = ["check"], repository / "pyproject.toml"
    else:
        argv, named = command(path), path
    assert_usage_error_naming(argv, EXPECTED[kind].format(path=named, what=what, cap=cap), capsys)


@pytest.mark.parametrize("text", [
    "a = " + "[" * 65 + "]" * 65,
    "a = " + "{b = " * 65 + "1" + "}" * 65,
    ".".join(["a"] * 66) + " = 1",
    " . ".join(["'k'"] * 66) + " = 1",
    "[" + ".".join(["a"] * 66) + "]\nx = 1",
    "[" + ".".join(["a"] * 40) + "]\n" + ".".join(["b"] * 30) + " = 1",  # parts of a header and a key add up
    ".".join(["a"] * 1_000_000) + " = 1",  # tomllib keeps every prefix: n**2 / 2 parts of memory
])
def test_toml_nested_too_deep_is_refused(tmp_path, text):
    """Arrays, inline tables, dotted keys and headers deeper than MAX_DEPTH: refused, before
    tomllib recurses or fills the memory with the prefixes of a dotted key."""
    path = tmp_path / "deep.toml"
    path.write_text(text)
    with hang_guard(), pytest.raises(UsageError, match=f"^{path}: nested more than {MAX_DEPTH} levels deep$"):
        read_toml(path, 1 << 23, "configuration file")


@pytest.mark.parametrize("text, depth", [
    ('a = "[[[[ {{{{ ... ]]]]"\nb = \'[[[[.....\'\n', 2),
    ('a = """\n[[[[\n\\""" ....\n"""\nb = \'\'\'\n{{{{ \'\' ....\'\'\'\'\n', 2),
    ("# [[[[[[[[[ a.b.c.d.e.f.g.h.i.j\na = [1.5, 2.5, 1979-05-27T07:32:00.999, 3.5]  # ]]]]\n", 2),
    ("[tool.posenc-spec]\n[[tool.posenc-spec.targets]]\nrope_parameters = { short_factor = [1.0, 1.5] }\n", 7),
    ('a = "x" # a comment with "quotes" and [brackets\nb = [[1], [2, [3]]]\n', 4),
])
def test_toml_brackets_and_dots_in_strings_comments_and_numbers_are_not_nesting(tmp_path, text, depth):
    """No false alarm: brackets and dots in strings, multi-line strings and comments, and the
    dots of numbers and dates, are not nesting; the file parses to data ``depth`` deep (the
    file's own table is 1)."""
    many_floats = "c = [" + ", ".join(["1.5"] * 1000) + "]\n"
    path = tmp_path / "fine.toml"
    path.write_text(many_floats + text)
    data = read_toml(path, 1 << 20, "configuration file")
    assert data_depth(data) == depth and toml_nesting(text) < depth and len(data["c"]) == 1000, data


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\,: ab'),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(alphabet='[]{}"\\ab'), children,
                                                                       max_size=3),
    max_leaves=20)


@given(JSON_VALUES)
def test_json_nesting_is_the_depth_of_the_data(value):
    """Brackets and quotes inside JSON strings do not count: the nesting measured on the text
    is the depth of the data it parses to."""
    assert json_nesting(json.dumps(value)) == data_depth(value)


def test_json_nested_too_deep_and_huge_numbers_are_one_line(tmp_path):
    """Deep JSON is refused before json.loads recurses; a number of more than 4300 digits and
    broken JSON each name the file."""
    cases = {DEEP_JSON: "nested more than 64 levels deep", "9" * 5000: "not JSON (Exceeds the limit (4300 digits)",
             '{"a": [1, 2}': "not JSON (Expecting ',' delimiter at line 1, column 12)"}
    for number, (text, words) in enumerate(cases.items()):
        path = tmp_path / f"{number}.json"
        path.write_text(text)
        with pytest.raises(UsageError) as error:
            read_json(path, 1 << 20, "Hugging Face config")
        assert str(error.value).startswith(f"{path}: {words}") and "\n" not in str(error.value), str(error.value)


def test_a_rope_param_nested_too_deep_is_a_usage_error(capsys):
    """--rope-param with a JSON value nested 100000 deep: exit 2, one line naming the flag and
    the depth rule of the files (it was "internal error: RecursionError")."""
    status = main(["check", "pkg.mod:fn", "--api", "rope-freqs", "--rope-param", "factor=" + DEEP_JSON])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1, err
    assert err.startswith("posenc-spec check: error: --rope-param: rope parameter 'factor=[[[") and \
        err.endswith(f"...': nested more than {MAX_DEPTH} levels deep\n"), err


def test_a_toml_integer_of_too_many_digits_names_the_file(tmp_path):
    """tomllib's int() refuses 5000 digits with a ValueError that is not a TOMLDecodeError."""
    path = tmp_path / "big.toml"
    path.write_text("a = " + "9" * 5000 + "\n")
    with pytest.raises(UsageError) as error:
        read_toml(path, 1 << 20, "configuration file")
    assert str(error.value).startswith(f"{path}: not valid TOML: Exceeds the limit (4300 digits)"), str(error.value)
    assert "set_int_max_str_digits" not in str(error.value)
