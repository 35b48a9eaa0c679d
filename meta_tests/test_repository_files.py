"""The repository's own files agree with each other and leave the clone as it was: the README
sections other files point to exist, the package says what it checks, tox writes nothing
into the clone that git would offer to commit."""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# README.md#some-anchor, or the README named with a quoted heading: the README, "Heading".
ANCHOR = re.compile(r"README\.md#([\w-]+)")
QUOTED = re.compile(r"README(?:\.md)?(?:'s)?,?\s+(?:section\s+)?\"([^\"]+)\"")
# A comment's line break and marker, so that a reference split over two comment lines reads as one.
COMMENT_BREAK = re.compile(r"\s*\n\s*(?:#|//|\*)?\s*")


def _tracked_texts() -> dict[str, str]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    texts = {}
    for name in filter(None, listed.decode().split("\0")):
        try:
            texts[name] = (ROOT / name).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
    return texts


def readme_headings() -> dict[str, str]:
    """The README's headings outside code blocks, by their GitHub anchor."""
    headings, fenced = {}, False
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (found := re.match(r"#{1,6} (.+)", line)):
            heading = found.group(1).strip()
            headings[re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")] = heading
    return headings


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs git and a checkout")
def test_every_readme_section_named_in_the_repository_exists():
    """Each README.md#anchor and each quoted README heading in a tracked file (the README's
    own links included) names a heading the README has."""
    headings = readme_headings()
    missing = []
    this_file = Path(__file__).resolve().relative_to(ROOT).as_posix()  # its patterns' examples are no references
    for name, text in _tracked_texts().items():
        if name == this_file:
            continue
        joined = COMMENT_BREAK.sub(" ", text)
        missing += [f"{name}: README.md#{anchor}" for anchor in ANCHOR.findall(joined) if anchor not in headings]
        missing += [f'{name}: the README, "{quoted}"' for quoted in QUOTED.findall(joined)
                    if quoted not in headings.values()]
        if name == "README.md":
            missing += [f"README.md: (#{anchor})" for anchor in re.findall(r"\]\(#([\w-]+)\)", text)
                        if anchor not in headings]
    assert not missing, f"no such README section: {missing}; headings: {sorted(headings.values())}"


def test_the_package_description_names_every_family_it_checks():
    """pyproject.toml's description (what an index shows) names sinusoidal tables, timestep
    embeddings and rotary embeddings."""
    description = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["description"]
    assert all(word in description.lower() for word in ("sinusoidal", "timestep", "rotary")), description


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs git and a checkout")
def test_tox_leaves_no_venv_file_in_the_clone():
    """tox is told not to write its PEP 832 .venv redirect file into the clone, and git
    ignores a .venv file or symlink all the same (a pattern ending in / matches folders only)."""
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(ROOT / "tox.ini", encoding="utf-8")
    assert tox.get("tox", "venv_redirect", fallback=None) == "false", dict(tox["tox"])
    ignored = subprocess.run(["git", "check-ignore", "--no-index", "-q", ".venv"], cwd=ROOT)
    assert ignored.returncode == 0, "git does not ignore a .venv file: .gitignore needs '.venv', not only '.venv/'"
