"""The repository's own files agree with each other and leave the clone as it was: the
sections of README.md and docs/ that other files point to exist, the key table lists every
key, the package says what it checks, tox writes nothing into the clone that git would offer
to commit."""

from __future__ import annotations

import configparser
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = ("README.md", *sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "docs").glob("*.md")))
# README.md#some-anchor or docs/checks.md#some-anchor, also at the end of the repository's URL.
ANCHOR = re.compile(r"(?<![\w.-])(README\.md|docs/[\w-]+\.md)#([\w-]+)")
# A document named with a quoted heading: the README, "Heading" or docs/checks.md, "Heading".
QUOTED = re.compile(r"(README(?:\.md)?|docs/[\w-]+\.md)(?:'s)?,?\s+(?:section\s+)?\"([^\"]+)\"")
# A Markdown link's target: [text](target).
LINK = re.compile(r"\]\(([^)\s]+)\)")
REPOSITORY = "https://github.com/posenc-spec/posenc-spec/blob/main/"
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


def headings(document: str) -> dict[str, str]:
    """A Markdown document's headings outside code blocks, by their GitHub anchor."""
    found, fenced = {}, False
    for line in (ROOT / document).read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (heading := re.match(r"#{1,6} (.+)", line)):
            text = heading.group(1).strip()
            found[re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")] = text
    return found


def _has(document: str, anchor: str | None = None, heading: str | None = None) -> bool:
    """Whether ``document`` (the README named as "the README" too) is a file with that
    section, named by its anchor or by its heading."""
    document = "README.md" if document.startswith("README") else document
    if not (ROOT / document).is_file():
        return False
    found = headings(document)
    return anchor in found if heading is None else heading in found.values()


def _broken_links(name: str, text: str) -> list[str]:
    """The links of a Markdown document to a file of the repository that does not exist, or
    to a section its document lacks (relative links, and the repository's own URLs)."""
    broken = []
    for target in LINK.findall(text):
        if target.startswith(REPOSITORY):
            path, anchor = target[len(REPOSITORY):].partition("#")[::2]
        elif "://" in target:
            continue
        else:
            relative, anchor = target.partition("#")[::2]
            path = os.path.normpath(Path(name).parent / relative) if relative else name
        if not (ROOT / path).exists() or anchor and not _has(path, anchor):
            broken.append(f"{name}: ({target})")
    return broken


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs git and a checkout")
def test_every_section_named_in_the_repository_exists():
    """Each README.md#anchor or docs/NAME.md#anchor and each quoted heading of the README or a
    document of docs/ in a tracked file names a heading that document has, and each link of
    the README and docs/ reaches a file of the repository and a section it has."""
    missing = []
    this_file = Path(__file__).resolve().relative_to(ROOT).as_posix()  # its patterns' examples are no references
    for name, text in _tracked_texts().items():
        if name == this_file:
            continue
        joined = COMMENT_BREAK.sub(" ", text)
        missing += [f"{name}: {document}#{anchor}" for document, anchor in ANCHOR.findall(joined)
                    if not _has(document, anchor)]
        missing += [f'{name}: {document}, "{heading}"' for document, heading in QUOTED.findall(joined)
                    if not _has(document, heading=heading)]
        if name in DOCUMENTS:
            missing += _broken_links(name, text)
    assert not missing, f"no such section: {missing}"


def _key_rows(path: Path) -> dict:
    """The ``| `key` | `flag` |`` rows of a document's "Every key" table."""
    section = path.read_text(encoding="utf-8").split("## Every key", 1)[1]
    return dict(re.findall(r"^\| `(\w+)` \| `([^`]+)` \|", section.split("\n## ", 1)[0], flags=re.M))


def test_the_key_table_lists_every_key():
    """docs/declaring.md's table of keys, with the tables of the families documented in
    docs/families/, has one row per key a declaration reads, with the flag that spells it,
    and no row for a key the gate does not read."""
    from posenc_spec import registry
    from posenc_spec.gate.keys import KEYS, flag

    rows = _key_rows(ROOT / "docs" / "declaring.md")
    for names in registry.names():
        own = ROOT / "docs" / "families" / f"{names.name}.md"
        if own.exists():
            rows |= _key_rows(own)
    expected = {key: "TARGET" if key == "target" else flag(key) for key in KEYS}
    wrong_flags = {key: (rows[key], expected[key]) for key in set(rows) & set(expected) if rows[key] != expected[key]}
    assert rows == expected, {"missing": sorted(set(expected) - set(rows)),
                              "unknown": sorted(set(rows) - set(expected)), "wrong flags": wrong_flags}


def test_the_readme_table_of_families_is_the_registry_s():
    """The README's table of families is what posenc_spec.registry.markdown_table() writes
    from the families' keys: a family added, renamed or given a key shows there."""
    from posenc_spec import registry

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- families: [^>]*-->\n(.*?)\n<!-- /families -->", readme, flags=re.S)
    assert found, "README.md has no <!-- families --> block"
    assert found.group(1) == registry.markdown_table(), (
        f"README.md's table of families is stale; paste:\n{registry.markdown_table()}")


def test_the_package_description_names_every_family_it_checks():
    """pyproject.toml's description (what an index shows) names each family the gate checks:
    the first word of each family's title."""
    from posenc_spec import registry

    description = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["description"]
    unnamed = [names.title for names in registry.names() if names.title.split()[0].lower() not in description.lower()]
    assert not unnamed, f"{description!r} names none of {unnamed}"


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs git and a checkout")
def test_tox_leaves_no_venv_file_in_the_clone():
    """tox is told not to write its PEP 832 .venv redirect file into the clone, and git
    ignores a .venv file or symlink all the same (a pattern ending in / matches folders only)."""
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(ROOT / "tox.ini", encoding="utf-8")
    assert tox.get("tox", "venv_redirect", fallback=None) == "false", dict(tox["tox"])
    ignored = subprocess.run(["git", "check-ignore", "--no-index", "-q", ".venv"], cwd=ROOT)
    assert ignored.returncode == 0, "git does not ignore a .venv file: .gitignore needs '.venv', not only '.venv/'"
