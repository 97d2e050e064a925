"""The portable runtime: every decoder of student bytes is bounded, and fuzzing finds nothing that escapes.

Property-based tests (Hypothesis) throw arbitrary bytes at the frame decoder and
arbitrary text and nesting at the answer parser and the notebook reader; the only
outcomes allowed are a value or the module's own error type. Each run is bounded
in examples and time (the `ci` profile below), so it runs in CI on every push.
"""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qkv_runtime import answers
from qkv_runtime.limits import Limits
from qkv_runtime.notebook import NotebookError, program_steps, python_of, read_cells, run_steps, step_of, Cell
from qkv_runtime.values import fmt_bytes, plain, plain_answers, to_arrays
from qkv_runtime.wire import (
    FRAME_HEAD,
    MAX_CALL_OUTPUT_BYTES,
    MAX_JSON_DEPTH,
    FrameBuffer,
    ProtocolError,
    encode_frame,
    pack_arrays,
    unpack_arrays,
)

settings.register_profile("ci", max_examples=300, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci")

X = np.arange(4.0)


# ---------------------------------------------------------------- wire


def test_arrays_refuse_odd_dtypes_absurd_shapes_and_forged_sizes() -> None:
    layout, blob = pack_arrays([X, np.array([True, False])])
    first, second = unpack_arrays(blob, layout)
    np.testing.assert_array_equal(first, X)
    assert second.dtype == bool and second.tolist() == [True, False]
    for dtype in ("|O", "<U4", "|V8", "<M8[s]", "object", "<f8 "):
        with pytest.raises(ProtocolError):
            unpack_arrays(b"\0" * 8, [[dtype, [1]]])
    with pytest.raises(ProtocolError):
        unpack_arrays(blob + b"\0", layout)  # bytes that no array declares
    with pytest.raises(ProtocolError):
        unpack_arrays(b"\0" * 16, [["<f8", [1_000_000_000_000]]])  # a forged shape allocates nothing
    with pytest.raises(ProtocolError):
        unpack_arrays(b"\0" * 8, [["<f8", [-1]]])
    with pytest.raises(ProtocolError):
        unpack_arrays(b"", "not a layout")
    with pytest.raises(ProtocolError):
        unpack_arrays(b"", [["<f8", [0, 10**30]]])  # no bytes, but no numpy array has such a shape
    with pytest.raises(ProtocolError):
        unpack_arrays(b"", [["<f8", [0, 2**31 - 1, 2**31 - 1, 2**31 - 1]]])  # within each bound, not together


def test_a_deeply_nested_header_is_a_protocol_error_not_a_recursion_error() -> None:
    deep = b'{"kind": "call", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    buffer = FrameBuffer(1 << 20)
    frames = buffer.feed(FRAME_HEAD.pack(len(deep), 0) + deep)
    assert frames == [] and "deeper" in buffer.error


def test_frames_before_garbage_are_kept_and_nothing_after() -> None:
    good = encode_frame({"kind": "start", "index": 0})
    buffer = FrameBuffer(1 << 20)
    frames = buffer.feed(good + b"\xff" * 64 + good)
    assert [h["kind"] for h, _ in frames] == ["start"]
    assert buffer.error and buffer.feed(good) == []


@given(st.binary(max_size=4096))
def test_the_frame_decoder_survives_any_bytes(data: bytes) -> None:
    buffer = FrameBuffer(1 << 16)
    for header, blob in buffer.feed(data):
        assert isinstance(header, dict) and isinstance(header["kind"], str) and isinstance(blob, bytes)


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
                           max_leaves=40)


@given(json_values, st.binary(max_size=256))
@pytest.mark.slow
def test_the_layout_decoder_survives_any_json(layout, blob: bytes) -> None:
    try:
        arrays = unpack_arrays(blob, layout)
    except ProtocolError:
        return
    assert sum(a.nbytes for a in arrays) == len(blob)


@given(st.integers(0, MAX_JSON_DEPTH * 3), st.sampled_from(["[", "{\"a\":"]))
def test_nesting_at_any_depth_is_decoded_or_refused(depth: int, opening: str) -> None:
    closing = "]" if opening == "[" else "}"
    text = '{"kind": "x", "v": ' + opening * depth + "1" + closing * depth + "}"
    buffer = FrameBuffer(1 << 20)
    frames = buffer.feed(FRAME_HEAD.pack(len(text), 0) + text.encode())
    assert (len(frames) == 1) == (depth < MAX_JSON_DEPTH) or buffer.error


# ---------------------------------------------------------------- answers


@pytest.mark.parametrize("text", ["[" + "-" * 5000 + "1]", "-" * 9000, "[" * 10_000 + "1" + "]" * 10_000,
                                  "(" * 50 + "1", "1/0", "[1, [2, 3]]", ",".join(["1"] * 20_000)])
def test_hostile_typed_numbers_are_format_errors(text: str) -> None:
    with pytest.raises(answers.AnswerFormatError):
        answers.parse_numbers(text)


def test_numbers_are_read_as_students_write_them() -> None:
    assert answers.parse_numbers("[[1/2, 1], [0, 1]]").tolist() == [[0.5, 1.0], [0.0, 1.0]]
    assert answers.parse_numbers("(0.1 0.2 0.7)").tolist() == [0.1, 0.2, 0.7]
    assert answers.parse_numbers("1,050,624").tolist() == 1050624.0
    assert answers.parse_numbers("1 2; 3 4").tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert answers.parse_numbers([1, (2, 3.5)][1]).tolist() == [2.0, 3.5]


@given(st.text(max_size=300))
def test_the_answer_parsers_survive_any_text(text: str) -> None:
    for parse in (answers.parse_numbers, answers.parse_shape, answers.parse_bool,
                  lambda t: answers.parse_choice(t, 4)):
        try:
            parse(text)
        except answers.AnswerFormatError:
            pass


@given(json_values)
def test_the_answer_parsers_survive_any_plain_value(value) -> None:
    for parse in (answers.parse_numbers, answers.parse_shape, answers.parse_bool):
        try:
            parse(value)
        except answers.AnswerFormatError:
            pass


# ---------------------------------------------------------------- values


def test_answers_are_made_plain_and_bounded() -> None:
    deep: list = []
    node = deep
    for _ in range(5000):
        node.append([])
        node = node[0]
    cleaned = plain_answers({"deep": deep, "nan": float("nan"), 1: "int key", "s": "\udcfc" + "x" * 20_000,
                             "big": 10**5000, "t": (1, 2)})
    assert cleaned["nan"] == "nan" and cleaned["1"] == "int key" and cleaned["t"] == [1, 2]
    assert len(cleaned["s"]) <= 10_000 and "\udcfc" not in cleaned["s"]
    assert isinstance(cleaned["big"], str)
    json.dumps(cleaned).encode("utf-8")
    assert plain(cleaned) == cleaned  # the grader applies it again to what arrives


def test_return_values_are_checked_before_they_are_sent() -> None:
    assert to_arrays(None) == "returned None, not an array (missing return?)"
    assert "not a numeric array" in to_arrays(np.array(["a"]))
    assert "100 items" in to_arrays([X] * 100)
    pair = to_arrays((X, 2 * X))
    assert len(pair) == 2 and pair[1].tolist() == [0.0, 2.0, 4.0, 6.0]


@pytest.mark.parametrize("returned", [np.arange(12.0).reshape(3, 4).T, np.arange(12.0)[::2],
                                      np.ones((2, 3), np.float32), np.array([True, False]), np.zeros((0, 4))])
def test_one_returned_array_comes_back_as_a_c_ordered_copy_of_its_own(returned) -> None:
    alone, listed = to_arrays(returned), to_arrays([returned])
    assert len(alone) == 1 and alone[0].dtype == listed[0].dtype and alone[0].tolist() == listed[0].tolist()
    assert alone[0].flags.c_contiguous and not np.shares_memory(alone[0], returned)


def test_a_returned_array_over_the_output_limit_is_refused_alone_or_in_a_tuple() -> None:
    big = np.zeros(MAX_CALL_OUTPUT_BYTES // 8 + 1)
    message = f"returned {big.nbytes:,}+ bytes of arrays; the limit is {fmt_bytes(MAX_CALL_OUTPUT_BYTES)}"
    assert to_arrays(big) == message and to_arrays((big,)) == message


def test_limits_from_plain_data_ignore_junk() -> None:
    assert Limits.from_json({"load_seconds": 3, "cpu_seconds": 7.9, "nope": 1, "max_processes": -1}) == \
        Limits(load_seconds=3.0, cpu_seconds=7)
    assert Limits.from_json("junk") == Limits()


# ---------------------------------------------------------------- notebooks


def notebook(*sources: str) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "source": s, "metadata": {}} for s in sources]})


def run_notebook(*sources: str) -> tuple[dict, list[str]]:
    namespace: dict = {}
    errors = run_steps(program_steps(read_cells(notebook(*sources))), namespace)
    return namespace, errors


def test_a_cell_is_compiled_as_jupyter_compiles_it_not_under_the_runtime_s_future_imports() -> None:
    """notebook.py has `from __future__ import annotations`; a cell must not inherit it: its annotations are
    evaluated when its function is defined, so a name they use must exist, as in Jupyter."""
    namespace, errors = run_notebook("def f(x: int) -> int:\n    return x\nkind = type(f.__annotations__['x']).__name__",
                                     "def g(x: Undefined):\n    return x")
    assert namespace["kind"] == "type"
    assert len(errors) == 1 and "NameError" in errors[0] and "Undefined" in errors[0], errors


def test_cell_magics_are_treated_as_jupyter_treats_them(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace, errors = run_notebook(
        "%%script false\nraise SystemExit('never')",
        "%%bash\necho not python",
        "%%writefile helper.py\nVALUE = 3\n",
        "import sys; sys.path.insert(0, '.')\nfrom helper import VALUE",
        "%%time\nx = VALUE * 2",
        "%%capture out\ny = 1",
        "%%nonsense\nz = 1",
    )
    assert namespace["VALUE"] == 3 and namespace["x"] == 6 and namespace["y"] == 1 and namespace["out"] is None
    assert "z" not in namespace
    assert errors == ["cell 7: unknown cell magic %%nonsense (Jupyter fails this cell)"]


def test_line_magics_are_inert_at_any_indentation_but_never_inside_strings_or_brackets() -> None:
    namespace, errors = run_notebook(
        "def f():\n    %time y = 1\n    return 2\n%matplotlib inline\n!pip install nothing",
        'DOC = """\n%not a magic\n"""\nv = (10\n     % 3)',
    )
    assert errors == []
    assert namespace["f"]() == 2 and namespace["DOC"] == "\n%not a magic\n" and namespace["v"] == 1
    assert python_of("    %time z = f()") == "    z = f()"
    # lines as Jupyter splits them (\r, form feed), help lines, a shell's output assigned, and no magic at all
    assert python_of("a = 1\r%matplotlib inline\x0cb = 2 != 3") == "a = 1\npass\nb = 2 != 3"
    assert python_of("np.linalg?\nfiles = !ls\nq = 7 % 2") == "pass\nfiles = None\nq = 7 % 2"
    assert python_of("x = 1\r\ny = (x % 2)\n") == "x = 1\ny = (x % 2)"


def test_the_look_for_magics_never_runs_on_past_a_line() -> None:
    # The grader reads every notebook of the class: a search whose line-start `\s*` ran on over the following
    # lines took quadratic time on a cell of blank lines (32,000 of them and a "%": 24 s). Its matches now start
    # on the line they are about, so the search is linear, and what it finds is unchanged.
    from qkv_runtime.notebook import _MAYBE_MAGIC

    assert _MAYBE_MAGIC.search("x = 1\n\n\n   %time y").start() == 8  # the magic's own line, not a blank before
    assert _MAYBE_MAGIC.search("files = \n!ls").start() == 9  # an assignment on one line, a shell line on the next
    assert _MAYBE_MAGIC.search("f?\n\n\n").span() == (1, 2)
    cell = "\n" * 3_000 + "x = 7 % 2"
    assert python_of(cell) == cell
    assert python_of("\xa0%time z = f()\n\u3000!ls") == "\xa0z = f()\n\u3000pass"  # any whitespace indents a magic


def test_sys_exit_in_a_cell_ends_only_that_cell() -> None:
    namespace, errors = run_notebook("import sys\na = 1\nsys.exit(0)\nb = 2", "c = 3")
    assert namespace["a"] == 1 and "b" not in namespace and namespace["c"] == 3
    assert errors == ["cell 1: called sys.exit(0); the rest of this cell did not run"]


def test_a_notebook_with_no_code_cells_runs_nothing() -> None:
    cells = read_cells(json.dumps({"cells": [{"cell_type": "markdown", "source": "# hi", "metadata": {}}]}))
    assert cells == [] and run_steps(program_steps(cells), {}) == []


def test_our_locked_cells_are_never_run_from_a_submission() -> None:
    steps = program_steps([Cell(1, "raise SystemExit", role="selfcheck"), Cell(2, "x = 1")])
    assert [s.cell for s in steps] == [2]
    assert step_of(Cell(3, "\n\n%%html\n<b>")).action == "skip"


@given(st.text(max_size=2000))
def test_the_notebook_reader_survives_any_text(text: str) -> None:
    try:
        program_steps(read_cells(text))
    except NotebookError:
        pass


@given(st.lists(st.text(max_size=200), max_size=5))
def test_any_cell_source_becomes_steps(sources: list[str]) -> None:
    for step in program_steps(read_cells(notebook(*sources))):
        assert step.action in ("python", "writefile", "skip", "fail")


def test_frames_survive_a_round_trip() -> None:
    header = {"kind": "call", "call_id": "a::b", "ok": True}
    layout, blob = pack_arrays([X])
    header["arrays"] = layout
    (got_header, got_blob), = FrameBuffer(1 << 20).feed(encode_frame(header, blob))
    assert got_header == header and unpack_arrays(got_blob, got_header["arrays"])[0].tolist() == X.tolist()
    assert struct.calcsize(">II") == FRAME_HEAD.size


# ---------------------------------------------------------------- the oldest Python promised


@pytest.mark.slow
def test_the_runtime_runs_on_python_3_9(tmp_path):
    """Student machines may be old: the runtime and the self-check promise Python 3.9 with numpy."""
    import glob
    import shutil
    import subprocess

    candidates = [shutil.which("python3.9"), *sorted(glob.glob("/root/.pyenv/versions/3.9*/bin/python3.9"))]
    python = next((c for c in filter(None, candidates)
                   if subprocess.run([c, "-c", "import venv"], capture_output=True).returncode == 0), None)
    if python is None:
        import os

        if os.environ.get("CI"):
            pytest.fail("no Python 3.9 on this CI machine")
        pytest.skip("no Python 3.9 here")
    venv = tmp_path / "py39"
    subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=300)
    installed = subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check",
                                "numpy==2.0.2"], capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr[-2000:]
    script = """
import json, numpy as np
from datetime import datetime, timezone
from qkv_runtime import answers, compare, limits, nbcells, notebook, practice, sealed, values, wire
assert answers.parse_numbers("[[1/2, 1], [0, 1]]").tolist() == [[0.5, 1.0], [0.0, 1.0]]
assert compare.compare([np.ones(2)], [np.ones(2)], 0, 0) is None
steps = notebook.program_steps(notebook.read_cells(json.dumps({"cells": [{"cell_type": "code", "source": "%%time\\nx = 1", "metadata": {}}]})))
ns = {}
assert notebook.run_steps(steps, ns) == [] and ns["x"] == 1
assert values.plain_answers({"a": (1, 2)}) == {"a": [1, 2]}
layout, blob = wire.pack_arrays([np.arange(3.0)])
assert wire.unpack_arrays(blob, layout)[0].tolist() == [0.0, 1.0, 2.0]
problems = (practice.PracticeProblem("a", "t", frozenset({"m"})), practice.PracticeProblem("b", "t", frozenset({"m"})))
at = datetime(2027, 3, 1, tzinfo=timezone.utc)
memory = practice.remember(problems, [practice.Try("a", 0, at, 0.0, ("m",))])
assert practice.next_problem(problems, memory) == practice.NextProblem("b", practice.Reason.MISCONCEPTION, "m")
print("ok")
"""
    import os

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([str(venv / "bin" / "python"), "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          env={"PYTHONPATH": root, "PATH": "/usr/bin:/bin"}, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
