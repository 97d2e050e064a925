"""The install line every hint names: what pip recorded of this qkv's install in, a line that works for it out.

Each case is a real dist-info folder, as pip writes one, where importlib.metadata is told to look.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from autograder import extras
from autograder.install_line import UNKNOWN_SOURCE, install_line
from conftest import ROOT


def recorded(tmp_path: Path, direct_url: str | None) -> list[str]:
    """A folder holding a qkv dist-info with `direct_url` (pip's direct_url.json text; None: none recorded)."""
    site = tmp_path / "site"
    info = site / "qkv-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: qkv\nVersion: 0.1.0\n")
    if direct_url is not None:
        (info / "direct_url.json").write_text(direct_url)
    return [str(site)]


def test_a_wheel_that_is_still_there_is_named_with_the_extra(tmp_path):
    wheel = tmp_path / "my dist's" / "qkv-0.1.0-py3-none-any.whl"  # a space and a quote: the shell must get it whole
    wheel.parent.mkdir()
    wheel.write_bytes(b"")
    site = recorded(tmp_path, json.dumps({"url": wheel.as_uri(), "archive_info": {"hash": "sha256=0"}}))
    assert shlex.split(install_line("torch", site)) == ["pip", "install", f"{wheel}[torch]"]


def test_an_editable_checkout_is_named_with_e(tmp_path):
    site = recorded(tmp_path, json.dumps({"url": tmp_path.as_uri(), "dir_info": {"editable": True}}))
    assert shlex.split(install_line("copying", site)) == ["pip", "install", "-e", f"{tmp_path}[copying]"]


def test_a_repository_url_is_pips_own_form(tmp_path):
    site = recorded(tmp_path, json.dumps({"url": "https://example.org/qkv.git",
                                          "vcs_info": {"vcs": "git", "commit_id": "0123abc"}}))
    assert shlex.split(install_line("canvas", site)) == ["pip", "install",
                                                         "qkv[canvas] @ git+https://example.org/qkv.git@0123abc"]


@pytest.mark.parametrize("direct_url", [
    json.dumps({"url": "file:///nowhere/qkv-0.1.0-py3-none-any.whl", "archive_info": {}}),  # the wheel was deleted
    "{not json", json.dumps(["a list"]), json.dumps({"url": 7}), None,
], ids=["deleted wheel", "bad json", "a list", "a number", "nothing recorded"])
def test_what_cannot_be_named_says_where_to_install_from(direct_url, tmp_path):
    site = recorded(tmp_path, direct_url)
    assert install_line("torch", site) == f"pip install 'PATH[torch]', PATH being {UNKNOWN_SOURCE}"


def test_this_checkout_as_make_setup_installs_it_is_named(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # away from the checkout's own qkv.egg-info, which records nothing
    # make setup installs the checkout editable (a wheel install is tests/course/test_course_doc.py's)
    assert install_line("torch") == f"pip install -e '{ROOT}[torch]'"


def test_every_hint_uses_it_and_none_names_a_package_index():
    for extra in extras.EXTRAS:
        assert extras.install_hint(extra).endswith(": " + install_line(extra))
    # `pip install 'qkv[...]'` names a package no index has: every hint goes through install_line
    sources = [p for p in (ROOT / "autograder").rglob("*") if p.suffix in (".py", ".j2") and p.is_file()]
    found = [f"{p}:{n}" for p in sources for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
             if re.search(r"pip install ['\"]?qkv\b", line)]
    assert found == []
