"""`qkv lti`: the commands of the service as an LTI tool: `keys` makes the tool's key pair, `config` prints what an
LMS admin enters to add the tool (registration.py), `sync` compares the LMS's class list with the roster."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import click

from autograder import extras


@click.group()
def lti() -> None:
    """qkv serve as an LTI 1.3 tool in Canvas, Moodle and other LMSs (docs/lti.md)."""


@lti.command()
@click.option("--out", type=click.Path(path_type=Path), metavar="FOLDER",
              help="where the pair goes (default: course.yaml's lti.keys, else lti-keys in the course folder)")
def keys(out: Optional[Path]) -> None:
    """Make the tool's RSA key pair (the private key owner-only); the service serves its public half."""
    extras.require("serve", "qkv lti keys")
    from autograder.course.find import find_course
    from autograder.serve.lti.keys import PUBLIC, make_keys

    course = find_course()
    # the bundled course lies inside the installed package: its pair goes in the current folder
    folder = out or (Path("lti-keys") if course.bundled else
                     course.root / (course.config.lti.keys if course.config.lti else "lti-keys"))
    private = make_keys(folder)
    click.echo(f"wrote {private} (owner-only: keep it out of version control) and {folder / PUBLIC}; "
               f"qkv serve publishes the public key at /lti/jwks.json")



@lti.command()
@click.option("--platform", "lms", type=click.Choice(["canvas", "moodle"]), required=True)
@click.option("--url", metavar="URL", help="the service's public address (default: course.yaml's lti.tool_url)")
def config(lms: str, url: Optional[str]) -> None:
    """Print the tool's registration for an LMS: Canvas's developer-key JSON, or Moodle's external-tool settings."""
    from autograder.course.find import find_course
    from autograder.errors import QkvError
    from autograder.serve.lti.registration import canvas_json, moodle_settings
    from autograder.course.lti_settings import tool_address

    course = find_course()
    if url:
        try:
            address = tool_address(url)
        except ValueError as err:
            raise QkvError("--url", str(err)) from None
    elif course.config.lti is not None:
        address = course.config.lti.tool_url
    else:  # an empty --url is none given
        raise QkvError("--url", "the service's public address is needed: --url https://... or lti.tool_url in "
                                "course.yaml")
    click.echo(canvas_json(address, course.title) if lms == "canvas" else moodle_settings(address, course.title))


@lti.command()
@click.argument("name")
@click.option("--roster", type=click.Path(path_type=Path), metavar="FILE", help="roster CSV (default: the course's)")
@click.option("--db", metavar="FOLDER|URL", help="as qkv serve --db (default: grades/serve)")
@click.option("--write", "write_to", type=click.Path(path_type=Path), metavar="FILE",
              help="also write the roster with the differences applied to FILE (never the roster itself)")
def sync(name: str, roster: Optional[Path], db: Optional[str], write_to: Optional[Path]) -> None:
    """Compare the LMS's learners in NAME's course with the roster: added, dropped, changed email (kept in the
    history); the roster itself is never changed."""
    extras.require("serve", "qkv lti sync")
    import time

    from autograder.course.find import find_course
    from autograder.errors import QkvError
    from autograder.grade.gradebook.accounts import ACCOUNTS_FILE
    from autograder.report.spreadsheet import csv_text
    from autograder.private import write_private
    from autograder.serve.command import _roster, _store
    from autograder.serve.lti.launch import LtiTool
    from autograder.serve.lti.members import applied, pull

    course = find_course()
    if course.config.lti is None:
        raise QkvError("course.yaml", "no `lti:` section: the course is not an LTI tool yet (docs/lti.md)")
    class_roster, which = _roster(roster)
    store = _store(db)
    tool = LtiTool.open(course.config.lti, course.root / course.config.lti.keys,
                        store if isinstance(store, str) else store / ACCOUNTS_FILE)
    try:
        done = pull(tool, name, class_roster, time.time())
    finally:
        tool.close()
    click.echo(which, err=True)
    click.echo(f"{len(done.members)} learner(s) in LMS course {done.course_id or '?'} ({done.issuer}), "
               f"{len(class_roster)} on the roster")
    for line in done.diff.lines() or ["no differences"]:
        click.echo(line)
    if write_to is not None:
        write_private(write_to, csv_text(applied(class_roster, done.diff)).encode())
        click.echo(f"sync {done.number} kept in the history; wrote {write_to}: point course.yaml's roster at it to "
                   "use it")
    else:
        click.echo(f"sync {done.number} kept in the history; the roster is unchanged (--write FILE writes one with "
                   "these differences applied)")


__all__ = ["lti"]
