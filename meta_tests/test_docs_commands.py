"""Every command of the docs runs: the fenced blocks of README.md and docs/*.md, read as a
reader copies them, each command with the outcome this file states for it.

- ``posenc-spec ...`` runs in process (``posenc_spec.cli.main``) in a folder of its own that
  holds stand-ins for the docs' placeholder targets (``mypkg.encoding:sinusoidal_table``,
  ``mypkg.diffusion:timestep_embedding``, ``mymodel.rotary:inv_freq`` and
  ``mymodel.rotary:apply_rotary_pos_emb``: correct implementations of what the docs declare
  them to be), the README's ``[tool.posenc-spec]`` as its ``pyproject.toml``, and the files
  the docs name (``configs/llama3_1_8b/config.json``, ``posenc-xfails.txt``, ``tests/``).
  ``--max-positions 64`` is added where the command takes it and gives none: the outcome is
  the same on the smaller grid, in a fraction of the time.
- ``pytest ...`` runs the same way through pytester, in this process.
- A ``python`` block runs as a script in a subprocess, in such a folder; it must exit 0.
- ``python benchmarks/X.py`` names a script whose ``--help`` works; ``tox``/``tox -e NAME``
  names an environment of tox.ini (and the files after ``--`` exist); ``pip install`` parses
  with pip's own parser into requirements and paths (not run: no network at test time).
- Commands that need the network, or that only make what the next ones use, are listed in
  ``NOT_RUN`` with the reason; a command no rule covers fails the test.

A failure names the document, the line and the command.
"""

from __future__ import annotations

import configparser
import contextlib
import fnmatch
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
LANGUAGES = ("sh", "toml", "yaml", "python", "text")
# Added to the commands that take it and give none (check, identify, init, plot, snapshot).
SMALL_GRID = ("--max-positions", "64")
CAPPED = ("check", "identify", "init", "plot", "snapshot")


@dataclass(frozen=True)
class Outcome:
    """What a documented ``posenc-spec`` command must give in the stand-ins' folder."""

    status: int
    why: str
    needs: tuple[str, ...] = ()  # files an earlier documented command makes (PREPARED)
    declared: bool = True  # whether the folder's pyproject.toml holds the README's declaration


# Each posenc-spec command of the docs, as written there (without its comment), and its outcome.
OUTCOMES = {
    "posenc-spec check": Outcome(0, "the README's declaration: both stand-ins conform"),
    "posenc-spec check --json posenc-report.json --junitxml posenc-junit.xml": Outcome(
        0, "the CI recipes' step: both declared stand-ins conform, the reports are written"),
    "posenc-spec check --json posenc-report.json --junitxml posenc-junit.xml -v": Outcome(
        0, "the same, every check listed"),
    "posenc-spec check --shard 1/2 --json A.json": Outcome(0, "the first of the two declared targets conforms"),
    "posenc-spec check --shard 2/2 --json B.json": Outcome(0, "the second of the two declared targets conforms"),
    "posenc-spec merge A.json B.json --json ALL.json": Outcome(
        0, "the two shards of one run join into a run that conforms", needs=("A.json", "B.json")),
    "posenc-spec check mypkg.encoding:sinusoidal_table --convention vaswani --odd ceil": Outcome(
        0, "the stand-in is vaswani with a ceil column at odd widths"),
    "posenc-spec check --builtin": Outcome(0, "the packaged references conform"),
    "posenc-spec check mymodel.rotary:inv_freq --api rope-freqs --base 500000 --rope-type llama3 "
    "--rope-param factor=8 --rope-param low_freq_factor=1 --rope-param high_freq_factor=4 "
    "--rope-param original_max_position_embeddings=8192": Outcome(0, "the stand-in computes Llama 3.1's frequencies"),
    "posenc-spec identify mypkg.encoding:sinusoidal_table": Outcome(0, "identified: vaswani, odd widths ceil"),
    "posenc-spec init mypkg.encoding:sinusoidal_table": Outcome(
        0, "a pyproject.toml with no entry for it gets one", declared=False),
    "posenc-spec snapshot mypkg.encoding:sinusoidal_table --out tests/posenc.npz": Outcome(
        0, "recorded into the existing folder tests/"),
    "posenc-spec check mypkg.encoding:sinusoidal_table --against tests/posenc.npz": Outcome(
        0, "the same code replays its recording bit for bit", needs=("tests/posenc.npz",)),
    "posenc-spec check mypkg.encoding:sinusoidal_table --against tests/posenc.npz --max-ulp 2": Outcome(
        0, "within 2 ULP of its recording", needs=("tests/posenc.npz",)),
    "posenc-spec diff old.npz new.npz": Outcome(
        0, "two recordings of the same code agree", needs=("old.npz", "new.npz")),
    "posenc-spec plot mypkg.encoding:sinusoidal_table --convention vaswani --out figures": Outcome(
        0, "every element within tolerance; the four pictures written"),
    "posenc-spec plot mypkg.encoding:sinusoidal_table --against tests/posenc.npz": Outcome(
        0, "the ULP distances to its recording drawn", needs=("tests/posenc.npz",)),
}
# The files a command needs, each made once by the documented command that writes it (old.npz
# and new.npz: the documented snapshot command, its --out changed: two recordings of the same code).
PREPARED = {
    "tests/posenc.npz": "posenc-spec snapshot mypkg.encoding:sinusoidal_table --out tests/posenc.npz",
    "old.npz": "posenc-spec snapshot mypkg.encoding:sinusoidal_table --out old.npz",
    "new.npz": "posenc-spec snapshot mypkg.encoding:sinusoidal_table --out new.npz",
    "A.json": "posenc-spec check --shard 1/2 --json A.json",
    "B.json": "posenc-spec check --shard 2/2 --json B.json",
}
# Each pytest command of the docs and its exit status in the same folder.
PYTEST_OUTCOMES = {
    "pytest --posenc-target mypkg.encoding:sinusoidal_table --posenc-convention vaswani --posenc-odd ceil": 0,
    "pytest --posenc": 0,
}
NETWORK = "needs the network"
NOT_RUN = {
    "python -m build": f"{NETWORK}: build fills an isolated environment from the index; tox -e package builds the "
                       "wheel and smoke-tests it (.ci/package_smoke.py)",
    "python3 -m venv .venv": "only makes the folder the pip lines after it install into (those are checked)",
    "PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu pre-commit install-hooks": f"{NETWORK}: pre-commit "
                                                                                        "clones the hook's repository",
    "python -c 'from transformers import GPT2Model; GPT2Model.from_pretrained(\"gpt2\")'": f"{NETWORK}: downloads "
                                                                                           "GPT-2's weights",
    "python -c 'from transformers import T5ForConditionalGeneration; "
    "T5ForConditionalGeneration.from_pretrained(\"t5-small\")'": f"{NETWORK}: downloads t5-small's weights",
}
# Python blocks another test runs, checking more than the exit status: (document, n-th python block).
RUN_ELSEWHERE = {("docs/python.md", 1): "spec_tests/core/test_api.py::test_the_documented_example_runs runs it and "
                                        "checks what it prints"}

# -- the stand-ins ------------------------------------------------------------------------------

ENCODING = '''\
import numpy as np


def sinusoidal_table(num_positions, dim):
    """Vaswani et al.; an odd width gets one more sin column (odd = "ceil")."""
    angles = np.arange(num_positions)[:, None] / 10000.0 ** (np.arange(0, dim, 2) / dim)
    table = np.empty((num_positions, dim))
    table[:, 0::2], table[:, 1::2] = np.sin(angles), np.cos(angles[:, : dim // 2])
    return table
'''
DIFFUSION = '''\
import torch


def timestep_embedding(timesteps, dim):
    """tensor2tensor: [sin | cos], exponents k / (half - 1); odd widths and width 2 raise."""
    half = dim // 2
    if dim % 2 or half < 2:
        raise ValueError(f"dim must be even and at least 4, got {dim}")
    exponents = torch.arange(half, dtype=torch.float64) / (half - 1)
    angles = timesteps.double()[:, None] * 10000.0 ** -exponents[None, :]
    return torch.cat([angles.sin(), angles.cos()], dim=1).float()
'''
ROTARY = '''\
import math

import torch


def inv_freq(head_dim):
    """Llama 3.1: theta 500000, llama3 scaling (factor 8, low 1, high 4, original length 8192)."""
    theta = 1.0 / 500000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    wavelength = 2 * math.pi / theta
    smooth = (8192 / wavelength - 1.0) / (4.0 - 1.0)
    blended = (1 - smooth) * theta / 8.0 + smooth * theta
    return torch.where(wavelength < 8192 / 4.0, theta, torch.where(wavelength > 8192, theta / 8.0, blended))


def _rotate_half(x):
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


def apply_rotary_pos_emb(x, positions):
    """x (batch, seq, heads, head_dim), rotate-half pairs, in float64, rounded once to x's dtype."""
    angles = torch.outer(positions.double(), inv_freq(x.shape[-1]))
    emb = torch.cat((angles, angles), dim=-1)[None, :, None, :]
    wide = x.double()
    return (wide * emb.cos() + _rotate_half(wide) * emb.sin()).to(x.dtype)
'''


# -- reading the docs ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    document: str
    line: int  # of its first line of content
    language: str
    text: str


@dataclass(frozen=True)
class Command:
    document: str
    line: int
    text: str  # as written, without its comment
    words: tuple[str, ...]  # without the NAME=VALUE words before it

    @property
    def where(self) -> str:
        return f"{self.document}:{self.line}: {self.text}"


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, with their language and first line."""
    found, opened, language, lines = [], None, "", []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            if opened is None:
                opened, language, lines = number + 1, line[3:].strip(), []
            else:
                found.append(Block(path.relative_to(ROOT).as_posix(), opened, language, "\n".join(lines) + "\n"))
                opened = None
        elif opened is not None:
            lines.append(line)
    return found


ALL_BLOCKS = [block for path in DOCUMENTS for block in blocks(path)]


def _command(document: str, line: int, text: str, variables: dict | None = None) -> list[Command]:
    """The commands of one shell line (``a && b`` is two), with ``$VARIABLE`` of a CI recipe
    replaced by the recipe's value."""
    for name, value in (variables or {}).items():
        text = text.replace("${" + name + "}", value).replace("$" + name, value)
    words = shlex.split(text, comments=True)
    commands, current = [], []
    for word in [*words, "&&"]:
        if word != "&&":
            current.append(word)
            continue
        assignments = 0
        while assignments < len(current) and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", current[assignments]):
            assignments += 1
        commands.append(Command(document, line, shlex.join(current), tuple(current[assignments:])))
        current = []
    return commands


def _shell_commands(block: Block) -> list[Command]:
    commands, pending = [], ""
    for offset, line in enumerate(block.text.splitlines()):
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        text = (pending + line).strip()
        pending = ""
        if text and not text.startswith("#"):
            commands += _command(block.document, block.line + offset, text)
    return commands


def _recipe_commands(block: Block) -> list[Command]:
    """The ``run:`` steps of a GitHub workflow and the ``script:`` lines of a GitLab job."""
    yaml = pytest.importorskip("yaml")
    recipe = yaml.safe_load(block.text)
    variables, scripts = {}, []

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("env", "variables") and isinstance(value, dict):
                    variables.update({str(name): str(item) for name, item in value.items()})
                elif key == "run" and isinstance(value, str):
                    scripts.extend(value.splitlines())
                elif key == "script" and isinstance(value, list):
                    scripts.extend(str(item) for item in value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(recipe)
    lines = block.text.splitlines()
    commands = []
    for script in scripts:
        offset = next((index for index, line in enumerate(lines) if script in line), 0)
        commands += _command(block.document, block.line + offset, script, variables)
    return commands


def documented_commands() -> list[Command]:
    commands = []
    for block in ALL_BLOCKS:
        if block.language == "sh":
            commands += _shell_commands(block)
        elif block.language == "yaml":
            commands += _recipe_commands(block)
    return commands


COMMANDS = documented_commands()


def _kind(command: Command) -> str:
    words = command.words
    if command.text in NOT_RUN:
        return "not run"
    if words[0] == "posenc-spec":
        return "posenc-spec"
    if words[0] == "pytest":
        return "pytest"
    if words[0] == "tox":
        return "tox"
    if Path(words[0]).name in ("pip", "pip3") and words[1:2] == ("install",) or \
            words[0] in ("python", "python3") and words[1:4] == ("-m", "pip", "install"):
        return "pip"
    if words[0] in ("python", "python3") and len(words) > 1 and words[1].startswith("benchmarks/"):
        return "benchmark"
    return "no rule"


def _of_kind(kind: str) -> list[Command]:
    return [command for command in COMMANDS if _kind(command) == kind]


def _distinct(commands: list[Command]) -> list[Command]:
    """One command per text: the first place it is written."""
    seen = {}
    for command in commands:
        seen.setdefault(command.text, command)
    return list(seen.values())


# -- the stand-ins' folder ----------------------------------------------------------------------


def _readme_declaration() -> str:
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## A first check", 1)[1]
    return section.split("```toml\n", 1)[1].split("\n```", 1)[0] + "\n"


def make_project(folder: Path, declared: bool = True) -> Path:
    """The stand-ins, the files the docs name, and (``declared``) the README's declaration,
    in a folder that is a repository root of its own."""
    (folder / ".git").mkdir()
    for name, text in (("mypkg/encoding.py", ENCODING), ("mypkg/diffusion.py", DIFFUSION),
                       ("mymodel/rotary.py", ROTARY), ("mypkg/__init__.py", ""), ("mymodel/__init__.py", ""),
                       ("posenc-xfails.txt", "# no known deviations\n")):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    config = folder / "configs" / "llama3_1_8b" / "config.json"
    config.parent.mkdir(parents=True)
    shutil.copyfile(ROOT / "spec_tests" / "data" / "rope_configs" / "llama3_1_8b.json", config)
    (folder / "tests").mkdir()
    if declared:
        (folder / "pyproject.toml").write_text(_readme_declaration(), encoding="utf-8")
    return folder


def run_posenc_spec(words) -> tuple[int, str]:
    """``posenc-spec`` in this process, in the working directory: its exit status and output."""
    from posenc_spec.cli import main

    arguments = list(words[1:])
    if arguments[0] in CAPPED and SMALL_GRID[0] not in arguments:
        arguments += SMALL_GRID
    said = io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        try:
            status = main(arguments)
        except SystemExit as exit_:  # argparse's usage errors
            status = exit_.code
    return status, said.getvalue()


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """A file of PREPARED, made once for the module by its documented command: its path."""
    made = {}

    def make(name: str) -> Path:
        if name not in made:
            folder = make_project(tmp_path_factory.mktemp("prepared"))
            with contextlib.chdir(folder):
                status, said = run_posenc_spec(shlex.split(PREPARED[name]))
            assert status == 0 and (folder / name).is_file(), f"making {name}: {PREPARED[name]}: {status}\n{said}"
            made[name] = folder / name
        return made[name]

    return make


# -- the tests ----------------------------------------------------------------------------------


def test_every_fenced_block_says_its_language():
    """Every fenced block of the docs is sh, toml, yaml, python or text, so that no command
    hides in a block this test does not read."""
    unlabelled = [f"{block.document}:{block.line - 1}: ```{block.language}" for block in ALL_BLOCKS
                  if block.language not in LANGUAGES]
    assert not unlabelled, f"fenced blocks without one of the languages {LANGUAGES}: {unlabelled}"


def test_every_command_has_a_rule():
    """Each command of the docs is run or checked by a rule of this file, or listed as not
    run with a reason."""
    unruled = [command.where for command in COMMANDS if _kind(command) == "no rule"]
    assert not unruled, f"commands no rule of {Path(__file__).name} covers (add one, or a reason to NOT_RUN): {unruled}"
    assert len(COMMANDS) >= 30, f"too few commands read from the docs: {[c.where for c in COMMANDS]}"


def test_every_stated_outcome_names_a_documented_command():
    """OUTCOMES, PYTEST_OUTCOMES and NOT_RUN name commands the docs still hold: none stale."""
    written = {command.text for command in COMMANDS}
    stale = [text for text in (*OUTCOMES, *PYTEST_OUTCOMES, *NOT_RUN) if text not in written]
    assert not stale, f"stated for commands the docs no longer hold: {stale}"
    undocumented = set(PREPARED.values()) - set(OUTCOMES) - {PREPARED["old.npz"], PREPARED["new.npz"]}
    assert not undocumented, f"PREPARED makes files by commands the docs do not hold: {undocumented}"


@pytest.mark.parametrize("command", _distinct(_of_kind("posenc-spec")), ids=lambda command: command.where)
def test_a_documented_posenc_spec_command_gives_its_outcome(command, tmp_path, monkeypatch, prepared):
    """The command, run in the stand-ins' folder, exits with the status OUTCOMES states."""
    assert command.text in OUTCOMES, f"{command.where}: state its outcome in OUTCOMES"
    outcome = OUTCOMES[command.text]
    monkeypatch.chdir(make_project(tmp_path, outcome.declared))
    for needed in outcome.needs:
        shutil.copyfile(prepared(needed), tmp_path / needed)
    status, said = run_posenc_spec(command.words)
    assert status == outcome.status, f"{command.where}: exit status {status}, expected {outcome.status} " \
                                     f"({outcome.why})\n{said}"


@pytest.mark.parametrize("command", _distinct(_of_kind("pytest")), ids=lambda command: command.where)
def test_a_documented_pytest_command_gives_its_outcome(command, pytester):
    """The pytest plugin's command, run in the stand-ins' folder, exits as PYTEST_OUTCOMES states."""
    assert command.text in PYTEST_OUTCOMES, f"{command.where}: state its outcome in PYTEST_OUTCOMES"
    make_project(pytester.path)
    pytester.syspathinsert()
    result = pytester.runpytest_inprocess(*command.words[1:], "-p", "no:cacheprovider", "-q", "-n", "0",
                                          "--posenc-max-positions", SMALL_GRID[1])
    assert result.ret == PYTEST_OUTCOMES[command.text], f"{command.where}: exit status {result.ret}\n" + \
        "\n".join(result.outlines[-30:])


def test_the_documented_declarations_gate_the_stand_ins(tmp_path, monkeypatch):
    """The README's declaration with docs/declaring.md's rotary target added (one
    pyproject.toml, as that page says) gates all three stand-ins: each conforms."""
    project = make_project(tmp_path)
    rotary = (ROOT / "docs" / "declaring.md").read_text(encoding="utf-8").split("```toml\n", 1)[1].split("\n```")[0]
    with (project / "pyproject.toml").open("a", encoding="utf-8") as pyproject:
        pyproject.write("\n" + rotary + "\n")
    monkeypatch.chdir(project)
    status, said = run_posenc_spec(["posenc-spec", "check"])
    assert status == 0 and "3 of 3 targets conform" in said, said


PYTHON_BLOCKS = [(block, ordinal) for path in DOCUMENTS
                 for ordinal, block in enumerate((b for b in blocks(path) if b.language == "python"), 1)]


@pytest.mark.parametrize(("block", "ordinal"), PYTHON_BLOCKS,
                         ids=[f"{block.document}:{block.line}" for block, _ in PYTHON_BLOCKS])
def test_a_documented_python_snippet_runs(block, ordinal, tmp_path):
    """Each Python block of the docs runs as a script in the stand-ins' folder and exits 0
    (its asserts hold), or another test runs it."""
    if (block.document, ordinal) in RUN_ELSEWHERE:
        pytest.skip(RUN_ELSEWHERE[block.document, ordinal])
    environment = {**os.environ, "MPLBACKEND": "Agg", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", block.text], cwd=make_project(tmp_path), capture_output=True,
                          text=True, timeout=300, env=environment)
    assert done.returncode == 0, f"{block.document}:{block.line}: the python block exited {done.returncode}\n" \
                                 f"{done.stdout[-3000:]}{done.stderr[-3000:]}"


def test_every_python_block_run_elsewhere_is_one():
    """RUN_ELSEWHERE names python blocks the docs have."""
    present = {(block.document, ordinal) for block, ordinal in PYTHON_BLOCKS}
    assert set(RUN_ELSEWHERE) <= present, (set(RUN_ELSEWHERE) - present, present)


def test_every_documented_benchmark_answers_help():
    """Each ``python benchmarks/X.py`` names a script that runs from the repository's root
    as written, and its ``--help`` exits 0 (all at once: most import torch first)."""
    commands = _distinct(_of_kind("benchmark"))
    assert commands, "no benchmark in the docs"
    missing = [command.where for command in commands if not (ROOT / command.words[1]).is_file()]
    assert not missing, f"no such script: {missing}"
    running = [(command, subprocess.Popen([sys.executable, command.words[1], "--help"], cwd=ROOT, text=True,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)) for command in commands]
    failed = []
    for command, process in running:
        out, err = process.communicate(timeout=300)
        if process.returncode != 0:
            failed.append(f"{command.where}: --help exited {process.returncode}: {err.strip()[-500:]}")
    assert not failed, "\n".join(failed)


def _tox_environments() -> set[str]:
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(ROOT / "tox.ini", encoding="utf-8")
    listed = {name.strip() for name in tox.get("tox", "env_list").split(",")}
    return listed | {section.split(":", 1)[1] for section in tox.sections() if section.startswith("testenv:")}


def test_every_documented_tox_command_names_an_environment():
    """``tox -e NAME`` names an environment of tox.ini, ``tox`` alone has an env_list to run,
    and the paths handed on after ``--`` exist."""
    environments, wrong = _tox_environments(), []
    commands = _distinct(_of_kind("tox"))
    assert len(commands) >= 8, [command.where for command in commands]
    for command in commands:
        words = list(command.words[1:])
        posargs = words[words.index("--") + 1:] if "--" in words else []
        words = words[:words.index("--")] if "--" in words else words
        if words and (words[0] != "-e" or len(words) != 2 or words[1] not in environments):
            wrong.append(f"{command.where}: expected tox or tox -e ENV, ENV one of {sorted(environments)}")
        wrong += [f"{command.where}: no such file {path}" for path in posargs
                  if not path.startswith("-") and not (ROOT / path).exists()]
    assert not wrong, "\n".join(wrong)


def _constraints() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints" / "ci.txt").read_text(encoding="utf-8").splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==", 1)
            pins[name.strip().lower()] = version.strip()
    return pins


def _pip_problems(command: Command) -> list[str]:
    """What is wrong with a ``pip install`` line: pip's own parser refuses it, an argument
    is neither a requirement nor an existing path, a pin disagrees with constraints/ci.txt."""
    from packaging.requirements import InvalidRequirement, Requirement
    from pip._internal.commands import create_command

    from posenc_spec import __version__

    # --isolated: this machine's pip configuration and PIP_* variables are no part of the line.
    arguments = ["--isolated", *command.words[command.words.index("install") + 1:]]
    with contextlib.redirect_stderr(io.StringIO()) as said:
        try:
            options, requirements = create_command("install").parse_args(arguments)
        except SystemExit:
            return [f"pip refuses it: {said.getvalue().strip().splitlines()[-1]}"]
    given = [word.split("=", 1)[-1] if "=" in word else following
             for word, following in zip(arguments, [*arguments[1:], ""], strict=True)
             if word.split("=", 1)[0] in ("-i", "--index-url", "--extra-index-url")]
    problems = [f"index {url!r} is not https" for url in given if not url.startswith("https://")]
    pins = _constraints()
    for argument in [*requirements, *options.editables]:
        if argument.endswith(".whl"):  # the wheel python -m build writes
            wheel = f"posenc_spec-{__version__}-py3-none-any.whl"
            if not fnmatch.fnmatch(f"dist/{wheel}", argument):
                problems.append(f"{argument} does not match the wheel {wheel}")
        elif argument.split("[", 1)[0] in (".", ".."):
            continue  # the project in the working directory
        else:
            try:
                requirement = Requirement(argument)
            except InvalidRequirement as error:
                problems.append(f"{argument!r} is no requirement: {error}")
                continue
            pinned = [spec.version for spec in requirement.specifier if spec.operator == "=="]
            if pinned and requirement.name.lower() in pins and pinned[0] != pins[requirement.name.lower()]:
                problems.append(f"{argument} where constraints/ci.txt pins {pins[requirement.name.lower()]}")
    return problems


def test_every_documented_pip_install_is_well_formed():
    """Each ``pip install`` line parses with pip's own parser into requirements, the project
    or the wheel ``python -m build`` writes, over https indexes, pins agreeing with
    constraints/ci.txt (none is run: no network at test time)."""
    commands = _distinct(_of_kind("pip"))
    assert len(commands) >= 6, [command.where for command in commands]
    problems = [f"{command.where}: {problem}" for command in commands for problem in _pip_problems(command)]
    assert not problems, "\n".join(problems)


def test_the_install_section_installs_torch_cpu_first():
    """The README's Install section installs torch's CPU build before posenc-spec, so that
    posenc-spec's torch>=2.1 is already met and PyPI's CUDA build is never fetched."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    start = lines.index("## Install") + 1
    end = next(number for number, line in enumerate(lines[start:], start + 1) if line.startswith("## "))
    section = [command for command in COMMANDS if command.document == "README.md" and start < command.line < end]
    torch = [command.line for command in section if "https://download.pytorch.org/whl/cpu" in command.words]
    package = [command.line for command in section if "posenc-spec @ git+https://github.com/posenc-spec/posenc-spec"
               in command.words]
    assert torch and package and torch[0] < package[0], [command.where for command in section]
