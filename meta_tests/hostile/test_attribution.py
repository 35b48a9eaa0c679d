"""Attribution that cannot be borrowed (``meta_tests/hostile/borrowed_attribution.py``): a
module the target wrote into a site folder, a loader of the target's own class, a spec whose
origin names NumPy while its loader runs the target's file, a finder of the target's that the
import system asks while an untouched library imports: each change made so is the
target's and fails ``global-state``; a module that was in the site folder before the run
stays a library's, its change a warning.

The site folder is a temporary ``site-packages`` on ``PYTHONPATH``, which the targets may
write (``POSENC_SPEC_WRITABLE``); a root template of its own (a preload no other run asks
for) starts with it on its path, as an installed library's folder.
"""

from __future__ import annotations

import sys
import time

import pytest

from meta_tests.hostile import MAX_POSITIONS, target
from posenc_spec.gate.declaration import declare
from posenc_spec.gate.engine import check_many
from posenc_spec.gate.options import run_options
from posenc_spec.gate.sandbox import FILE_CLOCK

BORROWED = ["imports_a_module_it_wrote", "runs_its_code_as_a_numpy_loader", "names_numpy_as_its_origin",
            "hooks_a_librarys_import", "caches_its_finder_for_the_site_folder"]
UNTOUCHED = "imports_an_untouched_library"
PRELOAD = ("colorsys",)  # a root template of this run's own, started with the site folder on its path


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    library = tmp_path_factory.mktemp("library") / "site-packages"
    library.mkdir()
    library.chmod(0o777)  # under root, a target runs as a user of its own
    installed = library / "posenc_hostile_installed.py"
    installed.write_text("import torch\ntorch.set_default_dtype(torch.float64)\n")
    (library / "posenc_hostile_importer.py").write_text("import posenc_hostile_leaf  # noqa: F401\n")
    (library / "posenc_hostile_leaf.py").write_text("VALUE = 1\n")
    (library / "posenc_hostile_importer_too.py").write_text("import posenc_hostile_leaf_too  # noqa: F401\n")
    (library / "posenc_hostile_leaf_too.py").write_text("VALUE = 1\n")
    written = max(path.stat().st_ctime_ns for path in library.iterdir())
    while time.clock_gettime_ns(FILE_CLOCK) <= written:  # the run begins after the file
        time.sleep(0.001)
    names = [*BORROWED, UNTOUCHED]
    declarations = [declare({"target": target("borrowed_attribution", name), "max_positions": MAX_POSITIONS})
                    for name in names]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", str(library))
        patch.setenv("POSENC_SPEC_WRITABLE", str(library))
        patch.setenv("POSENC_HOSTILE_LIBRARY", str(library))
        patch.setattr(sys, "path", [str(library), *sys.path])
        found = check_many(declarations, run_options(jobs=1, preload=PRELOAD))
    return dict(zip(names, found, strict=True))


@pytest.mark.parametrize("name", BORROWED)
def test_a_borrowed_import_is_the_targets_change(reports, name):
    """The change fails ``global-state`` (and nothing else), named; no warning calls it a library's."""
    report = reports[name]
    assert [check.name for check in report.failures()] == ["global-state"], report.failures()[:3]
    message = report.result("global-state").message
    assert "torch default dtype float32 -> float64" in message, message
    assert not any("import side effects" in warning for warning in report.warnings), report.warnings


def test_an_untouched_librarys_import_is_a_warning(reports):
    """A module the site folder held before the run: its change is its import's, kept, and a
    warning names the module."""
    report = reports[UNTOUCHED]
    assert report.conforms, report.failures()[:3]
    assert any("importing posenc_hostile_installed changed" in warning for warning in report.warnings), \
        report.warnings
