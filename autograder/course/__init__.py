"""The course: a folder with `course.yaml` in, a `Course` every command works in out.

A course holds its own question bank (problem files, or problem folders with their
own reference code), its assignments, its roster and its grading defaults, and
takes the bundled problems as a library (all, by topic, or by id; its own file of
the same id wins). Commands find the course from `--course DIR`, `QKV_COURSE`, or
the current folder upwards (as git finds its repository); outside any course they
use the course that ships with qkv. `find.py` finds and reads courses; `bank.py`
composes a course's bank; problem folders are the bank's (bank/folders.py);
`scaffold.py` writes `qkv init` courses and `qkv new` problems.
"""
