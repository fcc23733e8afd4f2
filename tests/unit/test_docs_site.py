"""The documentation site builds with `mkdocs build --strict` (`mkdocs.yml`, `docs/`):
a broken link or anchor, or a page left out of the navigation, fails the build, and so
this test. The last two tests break a copy of the site on purpose, so that a build that
stopped checking would be noticed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def build(root: str, site: str) -> subprocess.CompletedProcess:
    """`mkdocs build --strict` of the site whose mkdocs.yml is in `root`, into `site`."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            os.path.join(root, "mkdocs.yml"),
            "--site-dir",
            site,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


def copy_of_the_site(tmp_path) -> str:
    root = tmp_path / "copy"
    shutil.copytree(os.path.join(REPO, "docs"), root / "docs")
    shutil.copy(os.path.join(REPO, "mkdocs.yml"), root / "mkdocs.yml")
    return str(root)


def test_the_site_builds_strictly_and_works_from_files(tmp_path):
    site = tmp_path / "site"
    result = build(REPO, str(site))
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}\n{result.stderr}"
    # use_directory_urls: false, so a browser opens the pages as files.
    assert (site / "index.html").is_file() and (site / "reference" / "processors.html").is_file()
    home = (site / "index.html").read_text(encoding="utf-8")
    assert 'href="getting-started.html"' in home
    assert "fonts.googleapis.com" not in home


def test_a_broken_anchor_fails_the_build(tmp_path):
    root = copy_of_the_site(tmp_path)
    page = os.path.join(root, "docs", "operate", "compose.md")
    with open(page, encoding="utf-8") as file:
        text = file.read()
    assert "failures.md#a-datanodes-death" in text
    with open(page, "w", encoding="utf-8") as file:
        file.write(text.replace("failures.md#a-datanodes-death", "failures.md#no-such-heading"))
    result = build(root, str(tmp_path / "site"))
    assert result.returncode != 0 and "no-such-heading" in result.stdout + result.stderr


def test_a_page_missing_from_the_navigation_fails_the_build(tmp_path):
    root = copy_of_the_site(tmp_path)
    with open(os.path.join(root, "docs", "orphan.md"), "w", encoding="utf-8") as file:
        file.write("# Orphan\n")
    result = build(root, str(tmp_path / "site"))
    assert result.returncode != 0 and "orphan.md" in result.stdout + result.stderr
