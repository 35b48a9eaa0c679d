"""The gate's target loader: TARGET parsing, file and module imports, and its error messages."""

from __future__ import annotations

import os
import textwrap

import pytest

from posenc_spec.gate.loader import TargetError, absolute_target, load_target, parse_target


class Holder:
    """A class whose static method is a target (``Class.method``)."""

    @staticmethod
    def table(n, d):
        return (n, d)


NOT_CALLABLE = 42


@pytest.mark.parametrize("target, module, attr, is_path", [
    ("pkg.mod:fn", "pkg.mod", "fn", False),
    ("pkg:Class.method", "pkg", "Class.method", False),
    ("path/to/file.py:fn", "path/to/file.py", "fn", True),
    ("file.py:Outer.inner", "file.py", "Outer.inner", True),
    ("/abs/dir:with:colons/file.py:fn", "/abs/dir:with:colons/file.py", "fn", True),
])
def test_parse_target(target, module, attr, is_path):
    """Module and file targets split at the last colon; attributes may be dotted."""
    name = parse_target(target)
    assert (name.module, name.attr, name.is_path) == (module, attr, is_path), name


@pytest.mark.parametrize("target, words", [
    ("no_colon", "must be 'package.module:attr'"),
    ("pkg.mod:", "must be 'package.module:attr'"),
    (":fn", "must be 'package.module:attr'"),
    ("pkg-name.mod:fn", "is not a dotted module name"),
    ("pkg.mod:fn()", "is not a dotted attribute name"),
    ("dir/file.txt:fn", "must name a .py file"),
    (42, "must be a string"),
])
def test_malformed_targets_are_refused(target, words):
    """A malformed TARGET raises TargetError (a ValueError) naming what is wrong."""
    with pytest.raises(TargetError, match=words.replace("(", r"\(").replace(")", r"\)")):
        parse_target(target)


def test_absolute_target_resolves_files_only(tmp_path):
    """File targets become absolute (relative to the given folder); module targets stay."""
    assert absolute_target("pkg.mod:fn", tmp_path) == "pkg.mod:fn"
    assert absolute_target("sub/f.py:fn", tmp_path) == f"{tmp_path / 'sub' / 'f.py'}:fn"


def test_load_module_target_with_dotted_attribute():
    """``module:Class.method`` reaches a static method."""
    function = load_target("spec_tests.core.test_gate_loader:Holder.table")
    assert function(3, 4) == (3, 4)


def test_load_file_target_that_imports_its_neighbour(tmp_path):
    """A file target is imported with its folder on sys.path, so it can import a sibling."""
    (tmp_path / "helper_for_gate_target.py").write_text("WIDTH_FACTOR = 2\n")
    (tmp_path / "impl.py").write_text(textwrap.dedent("""
        from helper_for_gate_target import WIDTH_FACTOR

        def table(n, d):
            return n * WIDTH_FACTOR + d
    """))
    assert load_target(f"{tmp_path / 'impl.py'}:table")(3, 1) == 7


@pytest.mark.parametrize("target, words", [
    ("spec_tests.core.test_gate_loader:missing", "has no attribute 'missing'"),
    ("spec_tests.core.test_gate_loader:Holder.missing", "has no attribute 'missing'"),
    ("spec_tests.core.test_gate_loader:NOT_CALLABLE", r"is not callable \(type int\)"),
    (f"{os.sep}no{os.sep}such{os.sep}file.py:fn", "no such file"),
])
def test_load_errors_name_the_problem(target, words):
    """A missing attribute or file, or a value that is not callable: TargetError saying so."""
    with pytest.raises(TargetError, match=words):
        load_target(target)


def test_errors_raised_by_the_module_propagate(tmp_path):
    """An exception raised while the target's module runs reaches the caller unchanged (the
    worker turns it into the import check's one-line reason)."""
    (tmp_path / "broken.py").write_text("raise RuntimeError('broken at import')\n")
    with pytest.raises(RuntimeError, match="broken at import"):
        load_target(f"{tmp_path / 'broken.py'}:fn")
