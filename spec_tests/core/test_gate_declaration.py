"""Declarations: one validation layer for flags, [tool.posenc-spec] and --config files,
config discovery, and xfails files."""

from __future__ import annotations

from pathlib import Path

import pytest

from posenc_spec.families.sinusoidal.conventions import PRESETS, get_convention
from posenc_spec.families.sinusoidal.spec import SinusoidalSpec
from posenc_spec.gate.config import find_pyproject, read_config
from posenc_spec.gate.declaration import Declaration, declare
from posenc_spec.gate.errors import UsageError
from posenc_spec.gate.options import memory_size, run_options
from posenc_spec.gate.xfails import parse_xfails, read_xfails

REPO = Path(__file__).resolve().parents[2]


def test_defaults():
    """A bare target: vaswani, odd error, the table API, t_max 1000, no cap, no xfails."""
    declaration = declare({"target": "pkg.mod:fn"})
    assert declaration == Declaration("pkg.mod:fn", SinusoidalSpec(PRESETS["vaswani"]), written="pkg.mod:fn")
    spec = declaration.spec
    assert (spec.preset, spec.odd, declaration.convention_name()) == ("vaswani", "error", "vaswani")


def test_fields_override_the_preset():
    """Explicit fields replace the preset's; odd 'skip' keeps the preset's odd and skips."""
    declaration = declare({"target": "m:f", "convention": "tensor2tensor", "offset": 2, "scale": 1000.0,
                           "base": 500, "odd": "skip", "api": "timesteps", "t_max": 1.0, "max_positions": 512})
    assert declaration.spec.convention == get_convention("tensor2tensor", offset=2, scale=1000.0, base=500)
    assert (declaration.spec.skip_odd, declaration.api, declaration.t_max, declaration.max_positions) == (
        True, "timesteps", 1.0, 512)
    assert declaration.convention_name() == "tensor2tensor (base=500, offset=2, scale=1000)"


def test_text_from_flags_reads_as_the_typed_values_from_a_file():
    """Flags arrive as text; they declare exactly what the same keys typed in TOML declare."""
    typed = declare({"target": "m:f", "freq_shift": 1, "base": 500, "scale": 1e3, "max_positions": 64,
                     "timeout": 5})
    text = declare({"target": "m:f", "freq_shift": "1", "base": "500", "scale": "1e3", "max_positions": "64",
                    "timeout": "5"}, flags=True)
    assert text == typed


@pytest.mark.parametrize("keys, words", [
    ({}, "a target is required"),
    ({"target": "m:f", "colour": "red"}, "unknown key(s) 'colour'; known: target, convention"),
    ({"target": "m:f", "timout": 5}, "unknown key 'timout' (did you mean 'timeout'?)"),
    ({"target": "m:f", "convention": "vaswan"}, "convention must be one of vaswani, concat"),
    ({"target": "m:f", "convention": "vaswan"}, "(did you mean 'vaswani'?)"),
    ({"target": "m:f", "freq_shift": 2}, "freq_shift must be one of 0, 1"),
    ({"target": "m:f", "freq_shift": True}, "freq_shift must be"),
    ({"target": "m:f", "base": "ten thousand"}, "base must be a number"),
    ({"target": "m:f", "base": 1}, "base must be a number greater than 1"),
    ({"target": "m:f", "base": float("nan")}, "base must be a finite number"),
    ({"target": "m:f", "scale": 0}, "scale must be a non-zero number"),
    ({"target": "m:f", "offset": float("inf")}, "offset must be a finite number"),
    ({"target": "m:f", "odd": "round"}, "odd must be one of"),
    ({"target": "m:f", "api": "batch"}, "api must be one of"),
    ({"target": "m:f", "t_max": 0}, "t_max must be a number greater than 0"),
    ({"target": "m:f", "t_max": 2.0**63}, "t_max must be a number of at most"),
    ({"target": "m:f", "max_positions": 2.5}, "max_positions must be an integer"),
    ({"target": "m:f", "max_positions": 0}, "max_positions must be an integer from 1"),
    ({"target": "m:f", "timeout": -1}, "timeout must be a number greater than 0"),
    ({"target": "m:f", "timeout": 1e7}, "timeout must be a number of at most"),
    ({"target": "nocolon"}, "TARGET must be"),
])
def test_bad_keys_are_usage_errors(keys, words):
    """Every bad key or value is a UsageError (exit status 2) naming where, the key and the value."""
    with pytest.raises(UsageError) as error:
        declare(keys, where="gate.toml: ")
    assert words in str(error.value) and str(error.value).startswith("gate.toml: "), str(error.value)
    assert "\n" not in str(error.value)


def test_flags_are_named_as_flags():
    """A bad value given on the command line is named by its flag, with the same words."""
    with pytest.raises(UsageError, match=r"^--t-max must be a number greater than 0, got '-1'$"):
        declare({"target": "m:f", "t_max": "-1"}, flags=True)


def test_config_file_targets_with_defaults_and_relative_paths(tmp_path):
    """Top-level keys are defaults for each [[targets]] table; file targets and xfails files
    resolve against the config file's folder."""
    (tmp_path / "known.txt").write_text("odd[7]\n")
    config = tmp_path / "gate.toml"
    config.write_text('convention = "concat"\nmax_positions = 300\n\n'
                      '[[targets]]\ntarget = "impl.py:table"\nxfails = "known.txt"\n\n'
                      '[[targets]]\ntarget = "pkg.mod:fn"\nconvention = "fairseq"\nmax_positions = 64\n')
    first, second = read_config(config)
    assert first.target == f"{tmp_path / 'impl.py'}:table" and first.written == "impl.py:table"
    assert (first.spec.convention, first.max_positions) == (PRESETS["concat"], 300)
    assert [entry.pattern for entry in first.xfails.entries] == ["odd[7]"]
    assert (second.spec.convention, second.max_positions) == (PRESETS["fairseq"], 64)
    assert second.source == f"{config}: targets[1]"


def _toml_blocks(document: str) -> list[str]:
    text = (REPO / document).read_text(encoding="utf-8")
    return [block.split("\n```", 1)[0] for block in text.split("```toml\n")[1:]]


def test_the_documented_pyproject_snippets_combine(tmp_path):
    """The README's sinusoidal [tool.posenc-spec] snippet and docs/declaring.md's rotary one in
    one pyproject.toml: the top-level convention is a default for the sinusoidal targets only,
    and the rotary target is declared from its config.json."""
    sinusoidal, rotary = _toml_blocks("README.md")[0], _toml_blocks("docs/declaring.md")[0]
    (tmp_path / "pyproject.toml").write_text(sinusoidal + "\n" + rotary, encoding="utf-8")
    (tmp_path / "posenc-xfails.txt").write_text("")
    config = tmp_path / "configs" / "llama3_1_8b" / "config.json"
    config.parent.mkdir(parents=True)
    config.write_bytes((REPO / "spec_tests" / "data" / "rope_configs" / "llama3_1_8b.json").read_bytes())
    table, timesteps, rope = read_config(tmp_path / "pyproject.toml")
    assert (table.spec.preset, table.spec.odd, table.max_positions) == ("vaswani", "ceil", 2048), table
    assert (timesteps.api, timesteps.spec.preset) == ("timesteps", "tensor2tensor"), timesteps
    assert rope.api == "rope-apply" and rope.spec.convention.rope_type == "llama3", rope


def test_a_default_no_target_fits_is_a_usage_error(tmp_path):
    """A top-level rotary key over sinusoidal targets only takes effect nowhere: a usage error
    naming it, never silently dropped."""
    config = tmp_path / "gate.toml"
    config.write_text('rope_theta = 500000\n[[targets]]\ntarget = "a:f"\n')
    with pytest.raises(UsageError, match=r"^.*gate.toml: rope_theta is a default for the targets it fits, and no "
                                         r"target is a rotary embedding$"):
        read_config(config)


@pytest.mark.parametrize(("text", "words"), [
    ('max_positions = "2048"\n[[targets]]\ntarget = "a:f"\n', "gate.toml: max_positions must be a number, got '2048'"),
    ('[[targets]]\ntarget = "a:f"\ntimeout = "5"\n', "gate.toml: targets[0]: timeout must be a number, got '5'"),
    ('[[targets]]\ntarget = "a:f"\napi = "rope-freqs"\nrope_theta = "1e4"\n',
     "targets[0]: rope_theta must be a number, got '1e4'"),
])
def test_a_quoted_number_in_a_file_is_a_usage_error(tmp_path, text, words):
    """A number written as TOML text is a one-line usage error naming the file and the key;
    the same text from a command-line flag is read as the number (the flags are text)."""
    config = tmp_path / "gate.toml"
    config.write_text(text)
    with pytest.raises(UsageError) as error:
        read_config(config)
    assert words in str(error.value) and "without quotes" in str(error.value), str(error.value)
    config.write_text('[[targets]]\ntarget = "a:f"\n')
    (declaration,) = read_config(config, {"max_positions": "2048", "timeout": "5"})
    assert (declaration.max_positions, declaration.timeout) == (2048, 5), declaration


def test_command_line_flags_override_every_target(tmp_path):
    """Flags given with --config replace the keys of every target."""
    config = tmp_path / "gate.toml"
    config.write_text('[[targets]]\ntarget = "a:f"\nmax_positions = 64\n[[targets]]\ntarget = "b:f"\n')
    declarations = read_config(config, {"max_positions": 128, "convention": None})
    assert [declaration.max_positions for declaration in declarations] == [128, 128]


def test_pyproject_single_target_and_array(tmp_path):
    """[tool.posenc-spec] holds one target directly, or a targets array."""
    single = tmp_path / "single.toml"
    single.write_text('[project]\nname = "x"\n\n[tool.posenc-spec]\ntarget = "pkg.mod:fn"\nconvention = "concat"\n')
    assert [declaration.spec.convention for declaration in read_config(single)] == [PRESETS["concat"]]
    many = tmp_path / "many.toml"
    many.write_text('[tool.posenc-spec]\napi = "timesteps"\n[[tool.posenc-spec.targets]]\ntarget = "a:f"\n'
                    '[[tool.posenc-spec.targets]]\ntarget = "b:g"\n')
    assert [(d.target, d.api) for d in read_config(many)] == [("a:f", "timesteps"), ("b:g", "timesteps")]


def test_bom_and_crlf_are_accepted(tmp_path):
    """A UTF-8 byte-order mark and CRLF line ends, as editors on Windows write them."""
    config = tmp_path / "gate.toml"
    config.write_bytes(b'\xef\xbb\xbf[[targets]]\r\ntarget = "a:f"\r\nxfails = "x.txt"\r\n')
    (tmp_path / "x.txt").write_bytes(b"\xef\xbb\xbfodd[7]   # ceil, on purpose\r\nodd[65]\r\n")
    (declaration,) = read_config(config)
    assert [(e.pattern, e.reason, e.line) for e in declaration.xfails.entries] == [
        ("odd[7]", "ceil, on purpose", 1), ("odd[65]", "", 2)]


@pytest.mark.parametrize("data, words", [
    (b"[project]\nname = 'x'\n", "has no [[targets]] tables and no [tool.posenc-spec] table"),
    (b"[tool.posenc-spec\n", "not valid TOML"),
    (b"[tool.posenc-spec]\ntargets = 3\n", "'targets' must be a non-empty array of tables"),
    (b"[[tool.posenc-spec.targets]]\nconvention = 'concat'\n", "targets[0]: a target is required"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "line 1: not UTF-8 text"),
])
def test_bad_config_files_name_the_file(tmp_path, data, words):
    """A missing table, broken TOML, a bad targets array or a binary file: one line naming the file."""
    path = tmp_path / "pyproject.toml"
    path.write_bytes(data)
    with pytest.raises(UsageError) as error:
        read_config(path)
    assert str(path) in str(error.value) and words in str(error.value), str(error.value)


def test_missing_files_are_usage_errors(tmp_path):
    """No config file, no xfails file: each a UsageError naming the file."""
    with pytest.raises(UsageError, match="cannot read .*gate.toml"):
        read_config(tmp_path / "gate.toml")
    with pytest.raises(UsageError, match="cannot read the xfails file .*xfails.txt"):
        read_xfails(tmp_path / "xfails.txt")


def test_xfails_patterns_reasons_and_errors(tmp_path):
    """Check ids or glob patterns, '# reason', comments, blank lines; a binary file or a
    line that is no check id is an error naming the file and line."""
    xfails = parse_xfails("# known\n\nodd[*]   # ceil on purpose\nformula[4096x1024]\n", "x.txt")
    assert xfails.match("odd[65]").reason == "ceil on purpose" and xfails.match("formula[50x8]") is None
    assert [entry.pattern for entry in xfails.unmatched(["odd[7]"])] == ["formula[4096x1024]"]
    with pytest.raises(UsageError, match=r"^x.txt, line 2: 'not an id\$' is not a check id"):
        parse_xfails("odd[7]\nnot an id$\n", "x.txt")
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"odd[7]\n\xff\xfe\x00")
    with pytest.raises(UsageError, match=r"binary.txt, line 2: not UTF-8 text"):
        read_xfails(binary)


def test_nearest_pyproject_is_found_from_a_subfolder_and_stops_at_the_repository(tmp_path):
    """Like pytest and ruff: the nearest pyproject.toml with the table, up to the repository
    root; a search that finds none says where it looked."""
    (tmp_path / "pyproject.toml").write_text('[tool.posenc-spec]\ntarget = "a:f"\n')
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "deep").mkdir(parents=True)
    (repo / "pyproject.toml").write_text('[project]\nname = "x"\n')
    search = find_pyproject(repo / "src" / "deep")  # the repository's own has no table
    assert (search.found, search.start, search.stop, search.at_repository) == (None, repo / "src" / "deep", repo, True)
    assert search.places() == f"in {repo / 'src' / 'deep'} and each folder above it up to {repo} (the repository root)"
    assert find_pyproject(repo).places() == f"in {repo} (the repository root)"
    (repo / "pyproject.toml").write_text('[tool.posenc-spec]\ntarget = "b:g"\n')
    assert find_pyproject(repo / "src" / "deep").found == repo / "pyproject.toml"
    assert find_pyproject(tmp_path).found == tmp_path / "pyproject.toml"


NEAR_MISSES = ["tool.posenc_spec", "tool.posenc", "tool.PosEnc-Spec", "tool.posenc-specs", "tool.posencspec",
               "tool.posenc-sepc", "posenc-spec", "tools.posenc-spec", 'tool."posenc spec"']


@pytest.mark.parametrize("table", NEAR_MISSES)
@pytest.mark.parametrize("array", [False, True])
def test_a_table_named_close_to_tool_posenc_spec_is_named_wherever_it_is_read(tmp_path, table, array):
    """A slip in the table's name ([tool.posenc_spec], [[tool.posenc.targets]] ...) is a usage
    error naming the slip, the file and the right name: in a --config file, and in a
    pyproject.toml the search passes on its way up (also above one that has no table)."""
    header = f"[[{table}.targets]]" if array else f"[{table}]"
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "x"\n\n{header}\ntarget = "a:f"\n')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "pyproject.toml").write_text('[project]\nname = "y"\n')
    expected = f"{tmp_path / 'pyproject.toml'}: [{table}] is not read; did you mean [tool.posenc-spec]?"
    for read in (lambda: read_config(tmp_path / "pyproject.toml"), lambda: find_pyproject(tmp_path / "sub")):
        with pytest.raises(UsageError) as error:
            read()
        assert str(error.value) == expected


@pytest.mark.parametrize("table", ["tool.ruff", "tool.poetry", "tool.pytest.ini_options", "tool.posargs",
                                   "tool.spec-gate", "tool.pydocstyle", "project"])
def test_other_tools_tables_are_not_near_misses(tmp_path, table):
    """Tables of other tools beside [tool.posenc-spec] are left alone: no false alarm."""
    path = tmp_path / "pyproject.toml"
    path.write_text(f'[{table}]\nkey = 1\n\n[tool.posenc-spec]\ntarget = "a:f"\n')
    assert [declaration.target for declaration in read_config(path)] == ["a:f"]
    assert find_pyproject(tmp_path).found == path


@pytest.mark.parametrize("text, message", [
    ('[tool.posenc-spec]\nconvetion = "vaswani"\ntarget = "a:f"\n',
     "[tool.posenc-spec]: unknown key 'convetion' (did you mean 'convention'?)"),
    ('[tool.posenc-spec]\nmax-positions = 64\ntarget = "a:f"\n',
     "[tool.posenc-spec]: unknown key 'max-positions' (did you mean 'max_positions'?)"),
    ('[[tool.posenc-spec.tragets]]\ntarget = "a:f"\n',
     "[tool.posenc-spec]: unknown key 'tragets' (did you mean 'targets'?)"),
    ('[[tool.posenc-spec.targets]]\ntarget = "a:f"\nConvention = "concat"\n',
     "[tool.posenc-spec]: targets[0]: unknown key 'Convention' (did you mean 'convention'?)"),
    ('[[tool.posenc-spec.target]]\ntarget = "a:f"\n',
     "[tool.posenc-spec]: [[tool.posenc-spec.target]] should be [[tool.posenc-spec.targets]]"),
    ('[tool.posenc-spec.targets]\ntarget = "a:f"\n',
     "'targets' must be a non-empty array of tables ([[tool.posenc-spec.targets]])"),
])
def test_a_key_close_to_a_known_one_is_named(tmp_path, text, message):
    """A mistyped key, and [[target]] for [[targets]], are usage errors with the right spelling."""
    path = tmp_path / "pyproject.toml"
    path.write_text(text)
    with pytest.raises(UsageError) as error:
        read_config(path)
    assert str(error.value).startswith(f"{path} ") and message in str(error.value), str(error.value)


@pytest.mark.parametrize("text, message", [
    ('[[target]]\ntarget = "a:f"\n', ": [[target]] should be [[targets]] (one table per target)"),
    ('convention = "concat"\n[[target]]\ntarget = "a:f"\n', ": [[target]] should be [[targets]]"),
    ('[posenc_spec]\ntarget = "a:f"\n', ": [posenc_spec] is not read; did you mean [tool.posenc-spec]?"),
    ('target = "a:f"\nxfail = "x.txt"\n', ": unknown key 'xfail' (did you mean 'xfails'?)"),
])
def test_config_file_slips_are_named(tmp_path, text, message):
    """The same slips in a --config file of [[targets]]; a single target given as target = "..." stays valid."""
    path = tmp_path / "gate.toml"
    path.write_text(text)
    with pytest.raises(UsageError) as error:
        read_config(path)
    assert str(error.value).startswith(f"{path}{message}"), str(error.value)
    path.write_text('convention = "concat"\ntarget = "a:f"\n')
    assert [(d.target, d.spec.preset) for d in read_config(path)] == [("a:f", "concat")]


@pytest.mark.parametrize("kwargs, words", [
    ({"jobs": "0"}, "--jobs must be an integer from 1"),
    ({"jobs": "two"}, "--jobs must be an integer"),
    ({"shard": "3/2"}, "--shard must be an integer from 1 to 2"),
    ({"shard": "1"}, "--shard must be K/N"),
    ({"max_memory": "1"}, "--max-memory must be a size from 64MiB"),
    ({"max_memory": "lots"}, "--max-memory must be a size such as 4GiB"),
    ({"max_processes": "-3"}, "--max-processes must be an integer from 1"),
    ({"preload": ["ok", "os.path."]}, "--preload must be module names"),
    ({"preload": [3]}, "--preload must be module names"),
    ({"preload": "a;b"}, "--preload must be module names"),
])
def test_bad_run_options_are_usage_errors(kwargs, words):
    with pytest.raises(UsageError, match=words.replace("[", r"\[")):
        run_options(**kwargs)


def test_run_options():
    """Sizes with units; shards as K/N; jobs default to the usable cores; preloads in order, once each."""
    options = run_options(jobs="2", shard="2/3", max_memory="512MiB", max_processes="8")
    assert (options.jobs, options.shard, options.max_memory, options.max_processes) == (2, (2, 3), 2**29, 8)
    assert memory_size("--max-memory", "4G") == 4 * 2**30 and run_options().jobs >= 1
    assert run_options(preload=["a.b, c", "a.b"]).preload == ("a.b", "c") and run_options().preload == ()


def test_rotary_errors_name_the_flag_once():
    """A bad rope parameter names --rope-param (the flag a user typed), and an error the
    rotary keys raise themselves is not wrapped in a second prefix."""
    base = {"target": "pkg.mod:fn", "api": "rope-freqs"}
    with pytest.raises(UsageError, match=r"^--rope-param: rope parameter 'factor=abc'"):
        declare({**base, "rope_type": "linear", "rope_parameters": ["factor=abc"]}, flags=True)
    with pytest.raises(UsageError, match=r"^--rope-param: 'factor' given twice"):
        declare({**base, "rope_type": "linear", "rope_parameters": ["factor=2", "factor=4"]}, flags=True)
    with pytest.raises(UsageError, match=r"^--layer-type goes with a rope config"):
        declare({**base, "layer_type": "full_attention"}, flags=True)
