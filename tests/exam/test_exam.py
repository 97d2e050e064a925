"""Practice exams: balanced draws, reproducible files, answer keys that agree with the references, and pages that
render in a real browser (headless Chromium) and print to a PDF that is not blank.

The browser checks need Debian's chromium, poppler-utils and libjs-katex, which
`make setup` installs; where they are missing these tests fail and say so.
"""

from __future__ import annotations

import inspect
import math
import re
import shutil
import subprocess
from collections import Counter
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from conftest import said
from click.testing import CliRunner
from PIL import Image

from autograder.kinds.model import ChoiceParam, IntParam, Tolerance
from autograder.kinds.resolve import resolve
from autograder.cli import main
from autograder.errors import QkvError
from autograder.exam import exam_files, write_exam
from autograder.exam.pdf import find_browser, fixed_dates, headless_command, stable_node_ids
from autograder.exam.select import DEFAULT_KINDS, ExamSpec, difficulty_quota, draw_exam, instantiate, topic_groups
from autograder.kinds import KINDS, ImplementProblem, NumericProblem, kind_of
from autograder.kinds.numeric.parts import check_part, close, tolerance_text
from autograder.references import numpy_ref as ref

VARIANTS = 200
SETUP_HINT = "run `make setup` as root (it installs chromium, poppler-utils and libjs-katex)"


# ------------------------------------------------------------------ drawing


def test_difficulty_quota_is_even_and_capped_by_the_pool():
    assert difficulty_quota(Counter({1: 22, 2: 20, 3: 1}), 10) == {1: 4, 2: 5, 3: 1}
    assert difficulty_quota(Counter({1: 5, 2: 5, 3: 5}), 6) == {1: 2, 2: 2, 3: 2}
    assert difficulty_quota(Counter({1: 1, 2: 9, 3: 0}), 5) == {1: 1, 2: 4, 3: 0}


def test_different_seeds_keep_the_difficulty_and_spread_over_topics(bank):
    mixes, selections = set(), set()
    for seed in range(8):
        exam = draw_exam(bank, ExamSpec(count=10, seed=seed))
        assert len(exam.items) == 10 and [i.number for i in exam.items] == list(range(1, 11))
        assert all(i.problem.kind in DEFAULT_KINDS for i in exam.items)
        mixes.add(tuple(sorted(Counter(i.problem.difficulty for i in exam.items).items())))
        groups = Counter(i.group for i in exam.items)
        assert len(groups) == 10, f"seed {seed}: 10 problems should come from 10 of the 11 topics, got {groups}"
        assert [i.problem.difficulty for i in exam.items] == sorted(i.problem.difficulty for i in exam.items)
        selections.add(tuple(i.problem.id for i in exam.items))
    assert len(mixes) == 1, f"the difficulty mix changed with the seed: {mixes}"
    assert len(selections) > 4, "the seed should change which problems are drawn"


def test_every_draw_holds_as_many_points_of_true_statements_as_of_false_ones(bank):
    """All true or all false earns half of an exam's verdicts, and so does reading a cue of the statements (the
    follow-up's form, a hedging or an absolute word) within one statement's points: the draw swaps problems of the
    same difficulty, one at a time or two together, until the true and false statements hold equal points, in
    each cue's groups as far as the pool allows, keeping the topics spread (the test above). Over 30 seeds of
    three sizes: seed 1's 20 problems once kept 6 points of true statements against 5, every single swap that
    would even them blocked by the topics' spread or the kinds' shares."""
    from autograder.bank.cues import verdict_lean
    from autograder.bank.measures import verdict_points

    statements = 0
    for seed in range(30):  # kinds share a draw, so fewer statements each: 30 seeds draw over 300
        for spec in (ExamSpec(count=10, seed=seed), ExamSpec(count=20, seed=seed),
                     ExamSpec(count=12, seed=seed, kinds=("true_false", "multiple_choice"))):
            items = [(i.problem, i.problem.points) for i in draw_exam(bank, spec).items]
            true, false = verdict_points(items)
            assert sum(true) == sum(false), (spec, true, false)
            assert verdict_lean(items) <= max(true + false), (spec, verdict_lean(items))
            statements += len(true) + len(false)
    assert statements >= 300


def test_a_draw_whose_statements_cannot_be_balanced_is_refused_in_one_line(bank, tmp_path):
    # complexity's three statements are all false; with hand calculations beside them, numbers take the place of
    # all but one (one statement cannot be balanced further)
    spec = ExamSpec(topics=("complexity",), kinds=("true_false", "numeric"), count=3, seed=0)
    assert [kind_of(i.problem).truth(i.problem) for i in draw_exam(bank, spec).items].count(False) == 1
    result = CliRunner().invoke(main, ["exam", "--topics", "complexity", "--kinds", "true_false", "--count", "3",
                                       "--out", str(tmp_path / "p")])
    assert result.exit_code == 1 and "Traceback" not in result.output
    lines = said(result.output)
    assert len(lines) == 1 and "--topics" in lines[0] and "answering all false earns 100%" in lines[0], lines
    assert not (tmp_path / "p").exists()


def test_chosen_topics_share_the_count(bank):
    exam = draw_exam(bank, ExamSpec(topics=("attention", "masking/renormalise", "multi-head"), count=7, seed=3))
    groups = Counter(i.group for i in exam.items)
    assert sum(groups.values()) == 7 and max(groups.values()) - min(groups.values()) <= 1, groups
    assert all(i.problem.topic.startswith(i.group) for i in exam.items)


def test_a_student_gets_the_same_problems_with_numbers_of_their_own(bank):
    # every numeric problem, so that another seed draws the same problems (with numbers of its own)
    spec = ExamSpec(kinds=("numeric",), count=len(bank.by_kind("numeric")), seed=5)
    mine = draw_exam(bank, replace(spec, student="s1155000001"))
    theirs = draw_exam(bank, replace(spec, student="s1155000002"))
    other_seed = draw_exam(bank, replace(spec, seed=6))
    assert [i.problem.id for i in mine.items] == [i.problem.id for i in theirs.items]
    differ = sum(a.variant.params != b.variant.params for a, b in zip(mine.items, theirs.items))
    by_id = {i.problem.id: i.variant.params for i in other_seed.items}
    differ_seed = sum(by_id[i.problem.id] != i.variant.params for i in mine.items)
    assert differ >= 10 and differ_seed >= 10, (differ, differ_seed)


@pytest.mark.parametrize("spec, option", [
    (ExamSpec(topics=("no-such-topic",)), "--topics"),
    (ExamSpec(topics=("background",), kinds=("numeric",)), "--topics"),
    (ExamSpec(kinds=("essay",)), "--kinds"),
    (ExamSpec(count=500), "--count"),
])
def test_bad_choices_name_the_option(bank, spec, option):
    with pytest.raises(QkvError) as err:
        draw_exam(bank, spec)
    assert err.value.where == option


@pytest.mark.slow
def test_cli_errors_are_one_line_with_exit_code_1(tmp_path):
    runner = CliRunner()
    for args in (["exam", "--topics", "nope"], ["exam", "--kinds", "essay"], ["exam", "--count", "199"],
                 ["exam", "--student", "bad id!"]):
        result = runner.invoke(main, args + ["--out", str(tmp_path / "x")])
        assert result.exit_code == 1, result.output
        assert "Traceback" not in result.output and len(said(result.output)) == 1, result.output
        assert said(result.output)[0].startswith("error: --")


# -------------------------------------------------------------- documents


def test_same_arguments_give_the_same_bytes(bank):
    spec = ExamSpec(count=12, seed=11, student="s1155000003")
    made = {}
    for fmt in ("md", "html"):
        made[fmt] = exam_files(draw_exam(bank, spec), fmt)
        assert made[fmt] == exam_files(draw_exam(bank, spec), fmt)
        assert set(made[fmt]) == {f"exam.{fmt}", f"answer-key.{fmt}"}
    other = exam_files(draw_exam(bank, ExamSpec(count=12, seed=12)), "md")
    assert other["exam.md"] != made["md"]["exam.md"]


def test_exam_asks_and_key_answers_the_same_numbers(bank):
    exam = draw_exam(bank, ExamSpec(kinds=("numeric",), count=6, seed=2))
    files = exam_files(exam, "md")
    paper, key = files["exam.md"].decode(), files["answer-key.md"].decode()
    assert "Worked solution" not in paper and "Common mistakes" not in paper
    for item in exam.items:
        assert item.problem.title in paper and f"`{item.problem.id}`" in key
        for part in item.problem.parts:
            assert part.label in paper
            shown = kind_of(item.problem).key(item.problem, item.variant).lines[item.problem.parts.index(part)].answer
            assert shown in key


def test_code_problems_ask_for_the_function_and_never_show_the_reference(bank):
    exam = draw_exam(bank, ExamSpec(kinds=("implement",), count=12, seed=0))
    files = exam_files(exam, "md")
    paper, key = files["exam.md"].decode(), files["answer-key.md"].decode()
    for item in exam.items:
        problem = item.problem
        assert isinstance(problem, ImplementProblem)
        assert f"Write the function `{problem.signature}`" in paper
        source = inspect.getsource(resolve(problem.references["numpy"]))
        assert f"def {problem.function}(" not in key
        body = [line.strip() for line in source.splitlines()[1:] if len(line.strip()) > 30 and '"""' not in line]
        leaked = [line for line in body if line in key and line not in problem.solution]
        assert not leaked, f"{problem.id}: reference source in the key: {leaked}"


def test_cli_writes_exam_and_key(tmp_path):
    result = CliRunner().invoke(main, ["exam", "--count", "5", "--seed", "4", "--topics", "attention,masking",
                                       "--out", str(tmp_path / "e")])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "e").iterdir()) == ["answer-key.md", "exam.md"]
    assert "5 problems" in result.output


# --------------------------------------------- every variant well posed, key agrees


def _softmax_case(q, K, V=None):
    scores = ref.attention_scores(np.asarray([q], float), np.asarray(K, float), scale=False)[0]
    return scores, ref.softmax_rows(scores)


def independent_answers(problem_id: str, p: dict) -> dict:
    """Each problem's answers from numpy_ref and the formulas of the lecture, not from solutions.hand_calculations."""
    if problem_id == "one-query-by-hand":
        scores, weights = _softmax_case(p["q"], p["K"])
        scaled = ref.softmax_rows(ref.attention_scores(np.asarray([p["q"]], float), np.asarray(p["K"], float))[0])
        return {"scores": scores, "weights": weights, "output": ref.attention_output(weights[None], p["V"])[0],
                "scaled_weights": scaled}
    if problem_id == "two-keys-by-hand":
        scores, weights = _softmax_case(p["q"], p["K"])
        return {"scores": scores, "weights": weights,
                "output": ref.attention_output(weights[None], np.asarray(p["v"], float)[:, None])[0, 0]}
    if problem_id == "course-q1-scaled-score":
        q, k = np.asarray([p["q"]], float), np.asarray([p["k"]], float)
        return {"dot": ref.attention_scores(q, k, scale=False)[0, 0], "scaled": ref.attention_scores(q, k)[0, 0]}
    if problem_id == "course-q2-softmax-mix":
        weights = ref.softmax_rows(np.asarray(p["scores"], float))
        return {"weights": weights, "output": ref.attention_output(weights[None], p["V"])[0]}
    if problem_id == "dot-product-variance":
        spread = p["q_var"] * p["k_var"]  # of one product q_i k_i of independent entries
        return {"variance": p["d_k"] * spread, "std": math.sqrt(p["d_k"] * spread), "scaled_std": math.sqrt(spread)}
    if problem_id == "masked-renormalisation":
        scores, values = np.log(np.asarray(p["e"], float)), np.asarray(p["v"], float)
        keep = np.arange(3) != p["masked"]
        weights, masked = ref.softmax_rows(scores), ref.softmax_rows(scores, keep)
        return {"weights": weights, "output": weights @ values, "masked_weights": masked,
                "masked_output": masked @ values}
    if problem_id == "layer-norm-by-hand":
        x = np.asarray(p["x"], float)
        return {"mean": x.mean(), "variance": x.var(),
                "normalised": ref.layer_norm(x, np.ones(4), np.zeros(4), eps=0.0)}
    if problem_id == "ffn-by-hand":
        x, W1, W2 = (np.asarray(p[k], float) for k in ("x", "W1", "W2"))
        return {"pre": x @ W1, "hidden": np.maximum(x @ W1, 0),
                "output": ref.feed_forward(x, W1, np.zeros(3), W2, np.zeros(2))}
    if problem_id == "mha-parameter-count":
        d = p["d"]
        return {"weights": 4 * d * d, "biases": 4 * d, "total": 4 * d * d + 4 * d}
    if problem_id == "kv-sharing-parameters":
        d, h, g = p["d"], p["h"], p["groups"]
        width = d // h
        kv = lambda heads: 2 * (d * heads * width + heads * width)  # noqa: E731 - K and V, weights and biases
        return {"head_width": width, "mha_kv": kv(h), "gqa_kv": kv(g), "mqa_kv": kv(1),
                "gqa_total": 2 * (d * d + d) + kv(g)}
    if problem_id == "ffn-parameter-count":
        d, d_ff = p["d"], p["ratio"] * p["d"]
        ffn, mha = 2 * d * d_ff + d_ff + d, 4 * d * d + 4 * d
        return {"d_ff": d_ff, "ffn": ffn, "mha": mha, "ffn_share": ffn / (ffn + mha)}
    if problem_id == "score-growth":
        n, f = p["n_old"], p["factor"]
        return {"scores_old": n * n, "scores_new": (n * f) ** 2, "ratio": f * f}
    if problem_id == "attention-vs-ffn-cost":
        n, d, f = p["n"], p["d"], p["factor"]
        return {"attention": 2 * n * n * d, "attention_heads": 2 * n * n * d, "ffn": 2 * n * d * 4 * d,
                "attention_growth": f * f, "ffn_growth": f}
    if problem_id == "pe-entry":
        i = p["j"] // 2
        return {"pair": i, "angle": p["p"] / 10000 ** (2 * i / p["d"]),
                "value": ref.sinusoidal_positional_encoding(p["p"] + 1, p["d"])[p["p"], p["j"]]}
    return {}


CHECKED_INDEPENDENTLY = {
    "one-query-by-hand", "two-keys-by-hand", "course-q1-scaled-score", "course-q2-softmax-mix", "dot-product-variance",
    "masked-renormalisation", "layer-norm-by-hand", "ffn-by-hand", "mha-parameter-count", "kv-sharing-parameters",
    "ffn-parameter-count", "score-growth", "attention-vs-ffn-cost", "pe-entry",
}


def test_the_independent_checks_cover_the_bank(bank):
    numeric = {p.id for p in bank.by_kind("numeric")}
    assert CHECKED_INDEPENDENTLY <= numeric
    assert len(CHECKED_INDEPENDENTLY) >= 14


def _in_spec(spec, value) -> bool:
    if isinstance(spec, ChoiceParam):
        return value in spec.choice
    assert isinstance(spec, IntParam)
    return bool(np.all((np.asarray(value) >= spec.range[0]) & (np.asarray(value) <= spec.range[1])))


@pytest.mark.slow
def test_200_variants_of_every_parameterised_problem_are_well_posed_and_keyed_right(bank):
    problems = [p for p in bank.by_kind("numeric") if p.parameters]
    assert len(problems) >= 14
    for problem in problems:
        assert isinstance(problem, NumericProblem)
        by_hand = all(isinstance(s, IntParam) for s in problem.parameters.values())
        feasible = resolve(problem.feasible) if problem.feasible else None
        wrong_methods = [(m.id, resolve(m.compute)) for m in problem.misconceptions]
        for seed in range(VARIANTS):
            variant = instantiate(problem, seed, None)
            where = f"{problem.id} seed {seed} {variant.params}"
            assert all(_in_spec(problem.parameters[k], v) for k, v in variant.params.items()), where
            assert feasible is None or feasible(variant.params, variant.answers) is None, where
            expected = independent_answers(problem.id, variant.params) or resolve(problem.compute)(**variant.params)
            key = kind_of(problem).key(problem, variant)
            for part, line in zip(problem.parts, key.lines):
                answer = variant.answers[part.name]
                assert np.all(np.isfinite(answer)), f"{where}: {part.name} is not finite"
                # hand calculation stays feasible: numbers of four digits at most from small integers (a sum of
                # squares to 16, 1,496, is one formula), whole numbers where asked
                if by_hand:
                    assert np.all(np.abs(answer) < 10_000), f"{where}: {part.name} = {answer}"
                if part.form == "integer":
                    assert np.all(answer == np.round(answer)), f"{where}: {part.name} is not whole"
                # the key agrees with the references and its printed answer earns the marks
                assert close(answer, np.asarray(expected[part.name], float), part.tolerance), \
                    f"{where}: {part.name} {answer} but the references give {expected[part.name]}"
                assert check_part(part, answer, line.answer).correct, f"{where}: the key's '{line.answer}' is refused"
            # distinct where they must be: every misconception is told apart from the right answer
            for name, wrong in wrong_methods:
                values = wrong(**variant.params)
                assert any(part.name in values and not close(np.asarray(values[part.name], float),
                                                             variant.answers[part.name], part.tolerance)
                           for part in problem.parts), f"{where}: misconception {name} gives the right answers"


# ------------------------------------------------------------ in a browser


class _Text(HTMLParser):
    """The visible text of a rendered page: no script, style or KaTeX's hidden TeX source (MathML annotation)."""

    def __init__(self):
        super().__init__()
        self.skip, self.parts = 0, []

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style", "annotation"):
            self.skip += 1

    def handle_endtag(self, tag):
        if tag in ("script", "style", "annotation"):
            self.skip -= 1

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def browser() -> str:
    found = find_browser()
    assert found, f"headless Chromium is missing: {SETUP_HINT}"
    return found


def rendered_dom(page: Path, profile: Path) -> str:
    run = subprocess.run(headless_command(browser(), profile) + ["--virtual-time-budget=5000", "--dump-dom",
                                                                  page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "<body" in run.stdout, run.stderr[-2000:]
    return run.stdout


@pytest.mark.slow
def test_every_formula_of_the_bank_renders_in_chromium(bank, tmp_path):
    """All 55 problems (code problems too) in one exam and its key, opened in headless Chromium."""
    spec = ExamSpec(kinds=tuple(KINDS), count=len(bank.problems), seed=1)
    write_exam(spec, "html", tmp_path, bank=bank)
    for name in ("exam.html", "answer-key.html"):
        source = (tmp_path / name).read_text()
        assert "<link" not in source and "src=\"http" not in source and "url(http" not in source  # offline
        formulas = source.count('class="math')
        dom = rendered_dom(tmp_path / name, tmp_path / "profile")
        assert 'data-math="rendered"' in dom, f"{name}: the KaTeX script did not run"
        assert dom.count('<section class="problem"') == len(bank.problems)
        assert 'class="katex-error"' not in dom, re.findall(r'class="katex-error"[^>]*>[^<]{0,120}', dom)[:3]
        assert formulas > 100 and dom.count('<span class="katex">') == formulas
        displays = source.count('class="math display"')
        assert dom.count('class="katex-display"') == displays >= (5 if name == "exam.html" else 0)
        text = _Text()
        text.feed(dom)
        visible = "".join(text.parts)
        assert "$" not in visible, visible[max(0, visible.find("$") - 80):visible.find("$") + 80]
        assert "\\begin{pmatrix}" not in visible and "\\sqrt" not in visible


@pytest.mark.slow
def test_pdf_is_printed_reproducibly_and_page_one_is_not_blank(bank, tmp_path):
    spec = ExamSpec(count=3, seed=8, topics=("attention",), kinds=("numeric",))
    first = exam_files(draw_exam(bank, spec), "pdf")
    again = exam_files(draw_exam(bank, spec), "pdf")
    assert first == again, "the same arguments should give the same PDF bytes"
    assert first["exam.pdf"].startswith(b"%PDF") and first["exam.pdf"] != first["answer-key.pdf"]
    pdftoppm = shutil.which("pdftoppm")
    assert pdftoppm, f"pdftoppm is missing: {SETUP_HINT}"
    for name, data in first.items():
        (tmp_path / name).write_bytes(data)
        subprocess.run([pdftoppm, "-r", "50", "-png", "-f", "1", "-l", "1", "-singlefile", str(tmp_path / name),
                        str(tmp_path / name.replace(".pdf", ""))], check=True, timeout=60)
        pixels = np.asarray(Image.open(tmp_path / name.replace(".pdf", ".png")).convert("L"))
        ink = float((pixels < 128).mean())
        assert 0.005 < ink < 0.5, f"{name}: page 1 has {ink:.2%} dark pixels"


def test_fixed_dates_keep_the_length():
    stamped = b"<< /CreationDate (D:20261129124046+00'00') /ModDate (D:20261129124046Z) >>"
    fixed = fixed_dates(stamped)
    assert len(fixed) == len(stamped) and b"2026" not in fixed and b"(D:20000101000000+00'00')" in fixed


def test_structure_ids_are_renumbered_in_order_at_the_same_length():
    tagged = b"/ID (node00000039)>> /Headers [(node00000039)] /Names [(node00000039) 47 0 R (node00000824) 81 0 R]"
    stable = stable_node_ids(tagged)
    assert len(stable) == len(tagged)
    assert stable == b"/ID (node00000001)>> /Headers [(node00000001)] /Names [(node00000001) 47 0 R (node00000002) 81 0 R]"


def test_missing_renderers_are_named_in_one_line(tmp_path, monkeypatch):
    runner = CliRunner()
    monkeypatch.setattr("autograder.exam.pdf.find_browser", lambda: None)
    result = runner.invoke(main, ["exam", "--count", "2", "--format", "pdf", "--out", str(tmp_path / "p")])
    assert result.exit_code == 1 and "apt-get install chromium" in result.output
    assert len(said(result.output)) == 1 and not (tmp_path / "p").exists()
    monkeypatch.setenv("QKV_KATEX_DIR", str(tmp_path / "no-katex"))
    result = runner.invoke(main, ["exam", "--count", "2", "--format", "html", "--out", str(tmp_path / "h")])
    assert result.exit_code == 1 and "libjs-katex" in result.output
    assert len(said(result.output)) == 1


def test_nested_topics_each_get_their_own_problems(bank):
    groups = topic_groups(bank, ("masking", "masking/causal"), DEFAULT_KINDS + ("implement",))
    assert groups["masking/causal"] and all(p.topic == "masking/causal" for p in groups["masking/causal"])
    assert groups["masking"] and not any(p.topic == "masking/causal" for p in groups["masking"])
    with pytest.raises(QkvError, match="'masking' has no problem of the kinds .* outside masking/causal"):
        topic_groups(bank, ("masking", "masking/causal", "masking/fully-masked", "masking/renormalise",
                            "masking/padding"), DEFAULT_KINDS + ("implement",))


@pytest.mark.parametrize("tolerance, value, text", [
    (Tolerance(abs=0, rel=0), np.array(1_050_624.0), "exact"),
    (Tolerance(abs=5e-4, rel=0), np.array([0.3, 0.7, 0.1]), "accepted within ±0.0005 for each entry"),
    (Tolerance(abs=0, rel=1e-2), np.array([100.0, 300.0]), "accepted within ±(0 + 0.01 × |answer|) for each entry"),
])
def test_the_key_states_the_window_as_it_prints(tolerance, value, text):
    assert tolerance_text(tolerance, value) == text
