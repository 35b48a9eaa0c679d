"""Smoke test of the built distributions, as a user installs them (``tox -e package``).

Run with the folder ``python -m build`` wrote and a folder for a new virtualenv::

    python .ci/package_smoke.py DIST_DIR VENV_DIR

It checks the sdist and the wheel with ``twine check --strict``, makes a fresh virtualenv,
installs torch (its CPU build, through ``PIP_CONSTRAINT``), the wheel, pytest and jsonschema,
and runs itself again with ``--inside VERSION`` under that virtualenv's Python, in an empty
temporary folder, so that nothing of the repository can be imported. Inside it checks:

1. ``posenc-spec --version``, ``python -m posenc_spec --version`` and the installed
   metadata all give the wheel's version; posenc_spec comes from the virtualenv, and the
   repository's ``reference_impls`` was not installed with it;
2. ``posenc-spec check FILE.py:fn --convention vaswani --json ... --junitxml ...`` exits 0
   for a correct function and 1 for one with sine and cosine swapped; both JSON reports
   validate against the packaged schema (read with importlib.resources), both JUnit files
   parse and count the report's failures;
3. ``pytest --posenc-target FILE.py:fn --posenc-convention vaswani`` passes for the correct
   function and fails for the wrong one;
4. ``posenc-spec check`` in a subfolder finds ``[tool.posenc-spec]`` in a parent folder;
5. ``posenc-spec check`` in an empty folder without configuration checks nothing and exits 2;
   ``posenc-spec check --builtin`` runs the targets of the installed
   ``posenc_spec.registry.builtin_targets()``, all conforming;
6. code as its authors wrote it, with no wrapper: Meta's ``apply_rotary_emb(xq, xk,
   freqs_cis)`` and the PyTorch tutorial's ``PositionalEncoding`` module conform under their
   signatures, and each fails a wrong declaration with a hint naming the difference.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import zipfile
from pathlib import Path

CORRECT = '''\
import numpy as np


def table(num_positions, dim):
    """Vaswani et al.: sin in even columns, cos in odd ones, angle p / 10000 ** (2k / d)."""
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    angles = np.arange(num_positions)[:, None] / 10000.0 ** (np.arange(0, dim, 2) / dim)
    out = np.empty((num_positions, dim))
    out[:, 0::2], out[:, 1::2] = np.sin(angles), np.cos(angles)
    return out
'''
# The most common bug of the seeds: sine and cosine swapped.
BUGGY = CORRECT.replace("np.sin(angles), np.cos(angles)", "np.cos(angles), np.sin(angles)")


# Meta's reference apply and the PyTorch tutorial's module, as their authors wrote them: the
# repository's verbatim copies (with their sources and licences), copied beside the user's code.
VERBATIM = Path(__file__).resolve().parents[1] / "spec_tests" / "real_targets" / "verbatim"
STARTED = time.monotonic()


class SmokeFailure(Exception):
    """A step of the smoke test did not give what a user must get."""


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise SmokeFailure(message)
    print(f"ok [{time.monotonic() - STARTED:6.1f} s]: {message}", flush=True)


def run(command: list, cwd, expected: int | None = None) -> subprocess.CompletedProcess:
    """``command`` in ``cwd``, its output captured; SmokeFailure unless it exits ``expected``."""
    completed = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=_environment())
    if expected is not None and completed.returncode != expected:
        said = f"--- stdout\n{completed.stdout[-4000:]}\n--- stderr\n{completed.stderr[-4000:]}"
        raise SmokeFailure(f"{' '.join(map(str, command))} in {cwd} exited {completed.returncode}, "
                           f"expected {expected}\n{said}")
    return completed


def _environment() -> dict:
    environment = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    environment["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), environment.get("PATH", "")])
    environment.setdefault("HF_HUB_OFFLINE", "1")
    return environment


# ---------------------------------------------------------------- outside: build products, virtualenv


def distributions(dist: Path) -> tuple[Path, Path, str]:
    wheels, sdists = sorted(dist.glob("posenc_spec-*.whl")), sorted(dist.glob("posenc_spec-*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        raise SmokeFailure(f"expected one wheel and one sdist in {dist}, found {[p.name for p in dist.iterdir()]}")
    with zipfile.ZipFile(wheels[0]) as archive:
        names = archive.namelist()
        metadata = next(name for name in names if name.endswith(".dist-info/METADATA"))
        version = next(line.split(":", 1)[1].strip() for line in archive.read(metadata).decode().splitlines()
                       if line.startswith("Version:"))
    outside = sorted({name.split("/", 1)[0] for name in names} - {"posenc_spec", f"posenc_spec-{version}.dist-info"})
    expect(not outside, f"the wheel holds posenc_spec and its metadata only (also found: {outside or 'nothing'})")
    expect(any(name.endswith("dist-info/licenses/LICENSE") for name in names), "the wheel carries the LICENSE")
    for packaged in ("posenc_spec/py.typed", "posenc_spec/data/report-v1.schema.json"):
        expect(packaged in names, f"the wheel holds {packaged}")
    return wheels[0], sdists[0], version


def outside(dist: Path, venv: Path) -> int:
    wheel, sdist, version = distributions(dist)
    run([sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)], dist, expected=0)
    expect(True, f"twine check --strict passes for {wheel.name} and {sdist.name}")
    run([sys.executable, "-m", "venv", "--clear", str(venv)], dist, expected=0)
    python = venv / "bin" / "python"
    # torch first and alone, so that the constraints' CPU build is what the wheel's dependency finds.
    run([python, "-m", "pip", "install", "--quiet", "torch"], dist, expected=0)
    run([python, "-m", "pip", "install", "--quiet", str(wheel), "pytest", "jsonschema"], dist, expected=0)
    expect(True, f"a fresh virtualenv at {venv} has torch and {wheel.name}")
    with tempfile.TemporaryDirectory(prefix="posenc-smoke-") as empty:
        inside_run = subprocess.run([python, str(Path(__file__).resolve()), "--inside", version], cwd=empty,
                                    env={key: value for key, value in os.environ.items() if key != "PYTHONPATH"})
    return inside_run.returncode


# ---------------------------------------------------------------- inside: the installed wheel, an empty folder


def check_versions(version: str, folder: Path) -> None:
    import importlib.metadata
    import importlib.util

    import posenc_spec

    for label, command in (("posenc-spec --version", ["posenc-spec", "--version"]),
                           ("python -m posenc_spec --version", [sys.executable, "-m", "posenc_spec", "--version"])):
        said = run(command, folder, expected=0).stdout.strip()
        expect(said == f"posenc-spec {version}", f"{label} says {said!r}")
    expect(importlib.metadata.version("posenc-spec") == version, f"the installed metadata says {version}")
    expect(Path(posenc_spec.__file__).resolve().is_relative_to(Path(sys.prefix).resolve()),
           f"posenc_spec is imported from the virtualenv ({posenc_spec.__file__})")
    expect(importlib.util.find_spec("reference_impls") is None, "reference_impls is not installed")


def check_reports(folder: Path) -> None:
    import xml.etree.ElementTree as ET
    from importlib import resources

    import jsonschema

    schema = json.loads(resources.files("posenc_spec").joinpath("data", "report-v1.schema.json").read_text("utf-8"))
    for name, source, status, code in (("correct", CORRECT, "conforms", 0), ("buggy", BUGGY, "does-not-conform", 1)):
        (folder / f"{name}.py").write_text(source)
        json_path, junit_path = folder / f"{name}.json", folder / f"{name}.xml"
        run(["posenc-spec", "check", f"{name}.py:table", "--convention", "vaswani", "--json", str(json_path),
             "--junitxml", str(junit_path)], folder, expected=code)
        expect(True, f"posenc-spec check {name}.py:table exits {code}")
        report = json.loads(json_path.read_text("utf-8"))
        jsonschema.validate(report, schema)
        expect(report["status"] == status, f"{json_path.name} validates against the packaged schema: {status}")
        root = ET.parse(junit_path).getroot()
        failed = sum(check["status"] == "failed" for check in report["targets"][0]["checks"])
        expect(root.tag == "testsuites" and len(root.findall("testsuite")) == 1
               and int(root.get("failures")) == failed and (failed > 0) == (code == 1),
               f"{junit_path.name} parses: one suite, {failed} failures as in the JSON report")


def check_pytest_plugin(folder: Path) -> None:
    plugin_folder = folder / "plugin"
    plugin_folder.mkdir()
    for name, source, code in (("correct", CORRECT, 0), ("buggy", BUGGY, 1)):
        (plugin_folder / f"{name}.py").write_text(source)
        run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--posenc-target", f"{name}.py:table",
             "--posenc-convention", "vaswani"], plugin_folder, expected=code)
        expect(True, f"pytest --posenc-target {name}.py:table exits {code}")


def check_config_discovery(folder: Path) -> None:
    project = folder / "project"
    deeper = project / "src" / "deeper"
    deeper.mkdir(parents=True)
    (project / "correct.py").write_text(CORRECT)
    (project / "pyproject.toml").write_text(textwrap.dedent('''\
        [tool.posenc-spec]
        convention = "vaswani"

        [[tool.posenc-spec.targets]]
        target = "correct.py:table"
        '''))
    run(["posenc-spec", "check", "--json", "found.json"], deeper, expected=0)
    report = json.loads((deeper / "found.json").read_text("utf-8"))
    expect(Path(report["config"]).resolve() == (project / "pyproject.toml").resolve() and report["total_targets"] == 1,
           f"posenc-spec check in {deeper.relative_to(folder)} finds [tool.posenc-spec] in {project.name}/")


def check_builtin_default(folder: Path) -> None:
    from posenc_spec.registry import builtin_targets

    expected = [declared["target"] for declared in builtin_targets()]
    empty = folder / "empty"
    empty.mkdir()
    refused = run(["posenc-spec", "check", "--json", "default.json"], empty, expected=2)
    expect(refused.stderr.startswith("posenc-spec check: error: nothing to check: ") and refused.stderr.count("\n") == 1
           and not (empty / "default.json").exists(),
           f"posenc-spec check in an empty folder checks nothing: {refused.stderr.strip()}")
    run(["posenc-spec", "check", "--builtin", "--json", "default.json"], empty, expected=0)
    report = json.loads((empty / "default.json").read_text("utf-8"))
    ran = [target["target"] for target in report["targets"]]
    expect(len(expected) == 4 and ran == expected and report["total_targets"] == len(expected),
           f"posenc-spec check --builtin runs the {len(expected)} built-in targets "
           f"(ran {ran}, total_targets {report['total_targets']})")
    expect(report["status"] == "conforms" and all(target["status"] == "conforms" for target in report["targets"]),
           f"the built-in default conforms: {[target['status'] for target in report['targets']]}")


def check_targets_as_written(folder: Path) -> None:
    code = folder / "as_written"
    code.mkdir()
    for name in ("meta_llama.py", "pytorch_tutorial.py"):
        shutil.copyfile(VERBATIM / name, code / name)
    meta = ["posenc-spec", "check", "meta_llama.py:apply_rotary_emb", "--api", "rope-apply", "--signature",
            "xq-xk-freqs-cis", "--head-dim", "64"]
    tutorial = ["posenc-spec", "check", "pytorch_tutorial.py:PositionalEncoding", "--signature", "adds-to-x", "--init",
                "d_model={dim}", "--init", "max_len={num_positions}", "--max-positions", "64"]
    run([*meta, "--rope-layout", "interleaved"], code, expected=0)
    run(tutorial, code, expected=0)
    for command, wrong, words in ((meta, ["--rope-layout", "half"], "rotate-half and interleaved pairs mixed up"),
                                  (tutorial, ["--convention", "concat"], "the columns are interleaved")):
        failed = run([*command, *wrong, "--fail-fast"], code, expected=1)
        hints = [line for line in failed.stdout.splitlines() if line.strip().startswith("hint:")]
        expect(any(words in line for line in hints),
               f"{command[2]} declared with {' '.join(wrong)} fails with a hint naming it: {hints}")


def inside(version: str) -> int:
    folder = Path.cwd()
    expect(not any(folder.iterdir()), f"the smoke test starts in an empty folder, {folder}")
    check_versions(version, folder)
    check_reports(folder)
    check_pytest_plugin(folder)
    check_config_discovery(folder)
    check_builtin_default(folder)
    check_targets_as_written(folder)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dist", nargs="?", type=Path, help="the folder python -m build wrote")
    parser.add_argument("venv", nargs="?", type=Path, help="where to make the fresh virtualenv")
    parser.add_argument("--inside", metavar="VERSION", help="run the checks on the installed wheel (internal)")
    args = parser.parse_args(argv)
    try:
        if args.inside:
            return inside(args.inside)
        if args.dist is None or args.venv is None:
            parser.error("give DIST_DIR and VENV_DIR")
        return outside(args.dist, args.venv)
    except SmokeFailure as failure:
        print(f"package smoke test FAILED: {failure}", file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
