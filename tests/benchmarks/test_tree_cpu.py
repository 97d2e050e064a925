"""benchmarks/tree_cpu.py: a command's whole process tree's CPU, as the kernel counts it in a control group of the
command's own, a process nobody waits for included; and no figure at all where no group can be made."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import tree_cpu  # noqa: E402

SPIN = "import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end: pass\n"
# a parent that spins 0.3 s and leaves a child of a session of its own spinning 0.6 s, never waited for
ORPHANING = (SPIN.format(seconds=0.3) + "import subprocess, sys\n"
             f"subprocess.Popen([sys.executable, '-c', {SPIN.format(seconds=0.6)!r}], start_new_session=True)\n")


def test_the_tree_is_counted_a_child_nobody_waits_for_included():
    with tree_cpu.CgroupCpu("test") as tree:
        if tree.group is None:
            pytest.skip("no control group can be made here (not root, no delegated cgroup): the figure is left out")
        subprocess.run(tree.wrap([sys.executable, "-c", ORPHANING]), check=True)
        seconds = tree.seconds()
        group = tree.group
    assert seconds is not None and 0.85 <= seconds < 5  # 0.9 s spun, and the interpreters' start
    assert not group.exists()


def test_where_no_group_can_be_made_the_command_runs_as_it_is_and_there_is_no_figure(tmp_path, monkeypatch):
    monkeypatch.setattr(tree_cpu, "HIERARCHIES", ((tmp_path / "no-cgroup", "cpu.stat", "usage_usec"),))
    with tree_cpu.CgroupCpu("test") as tree:
        assert tree.wrap(["true"]) == ["true"] and tree.seconds() is None
