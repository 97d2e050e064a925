"""Written problems (numeric, shape, true/false, multiple choice): right or wrong by the grader's rules, decided by
opening the answers sealed under slow scrypt keys (qkv_runtime.sealed); no answer is in the release in clear.

Each written kind's judge reads what the kind's `selfcheck_data` (autograder/kinds/) wrote: `WRITTEN` holds one per
judge the kinds name (`Kind.selfcheck_judge`), so a written kind with a new way of judging needs its entry here.
"""

from __future__ import annotations

import itertools
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from qkv_runtime import answers as qkv_answers
from qkv_runtime import diagnosis, judge, sealed
from qkv_runtime.values import plain

from .data import CLASS, student_key
from .outcomes import FAIL, PASS, TODO, Outcome

NO_KDF = ("not checked: this Python's hashlib has no scrypt (built with LibreSSL, as Apple's /usr/bin/python3 is); "
          "check with a Python from python.org, Homebrew or conda")


def _derive(data: Dict[str, Any], password: str, salt: str) -> bytes:
    """One slow key (sealed.derive_key, with the release's parameters): what each candidate costs."""
    return sealed.derive_key(password, salt, data["kdf"])


def _answer_key(data: Dict[str, Any], student: str, problem: Dict[str, Any], canonical: str) -> bytes:
    salt = sealed.digest_salt(data["assignment"], student, problem["id"], "answer")
    return _derive(data, sealed.answer_password(canonical), salt)


def _hits(key: bytes, seals: List[Tuple[str, Any]], typed: List[float], tol_abs: float, tol_rel: float) -> set:
    """The labels among `seals` ([(label, {"tag", "sealed"})]) whose key this is and whose exact values
    the typed numbers are within the grader's tolerance of."""
    found = set()
    for label, seal in seals:
        if sealed.tag(key, label) != seal["tag"]:
            continue
        if judge.close(typed, sealed.unseal(key, label, seal["sealed"]), tol_abs, tol_rel):
            found.add(label)
    return found


def match_numbers(data: Dict[str, Any], student: str, problem: Dict[str, Any], part: Dict[str, Any],
                  spec: Dict[str, Any], typed: np.ndarray, mistakes: List[Dict[str, Any]]) -> Tuple[bool, List[str]]:
    """(whether the typed numbers are right, by the grader's rule, and the labels of the mistakes they are).

    For each candidate cell (tuple of cells) the grader's window around the typed numbers touches,
    one key; a key that opens a tag unseals the exact value, which the grader's rule then judges.
    At most sealed.most_keys(size) keys; a right answer stops the search.
    """
    tol = part["tolerance"]
    tol_abs, tol_rel = float(tol["abs"]), float(tol["rel"])
    flat = [float(x) for x in typed.reshape(-1)]
    sizes = [float(s) for s in spec["cells"]]
    if len(sizes) != len(flat):
        return False, []
    candidates = [sealed.candidate_cells(x, size, tol_abs, tol_rel) for x, size in zip(flat, sizes)]
    if any(not c for c in candidates):
        return False, []
    name = part["name"]
    labelled = [("right", spec["right"])] + [(m["label"], m["digests"][name]) for m in mistakes if name in m["digests"]]
    labels = [label for label, _ in labelled[1:]]

    def salt(suffix: str) -> str:
        return sealed.digest_salt(data["assignment"], student, problem["id"], name + suffix)

    if spec["mode"] == "whole":
        seals = [(label, s[0]) for label, s in labelled]
        found: set = set()
        for combo in itertools.product(*candidates):
            key = _derive(data, sealed.cell_password(sizes, typed.shape, combo), salt(""))
            hits = _hits(key, seals, flat, tol_abs, tol_rel)
            if "right" in hits:
                return True, []
            found |= hits
        return False, [label for label in labels if label in found]

    # "each": entry by entry, x's own cell first; an entry found right is not searched further
    per_entry: List[set] = []
    left: List[List[int]] = []
    for i, (x, cells) in enumerate(zip(flat, candidates)):
        seals = [(label, s[i]) for label, s in labelled]
        found = set()
        for n, cell in enumerate(cells):
            found |= _hits(_derive(data, sealed.cell_password([sizes[i]], (), [cell]), salt(f"[{i}]")),
                           seals, [x], tol_abs, tol_rel)
            if "right" in found:
                break
        per_entry.append(found)
        left.append(cells[n + 1:])
    if all("right" in found for found in per_entry):
        return True, []
    if labels:  # wrong: finish the entries cut short, so that a mistake every entry is can be named
        for i, cells in enumerate(left):
            seals = [(label, s[i]) for label, s in labelled[1:]]
            for cell in cells:
                per_entry[i] |= _hits(_derive(data, sealed.cell_password([sizes[i]], (), [cell]), salt(f"[{i}]")),
                                      seals, [flat[i]], tol_abs, tol_rel)
    return False, [label for label in labels if all(label in found for found in per_entry)]


def _numeric(data, problem, student, typed, who="") -> List[Outcome]:
    parts = problem["parts"]
    specs = problem["digests"][student]
    mistakes = problem.get("misconceptions", {}).get(student, [])
    if len(parts) > 1 and not isinstance(typed, dict):
        names = ", ".join(f'"{p["name"]}": ...' for p in parts)
        return [Outcome(FAIL, f"expected a dictionary with one entry per part: {{{names}}}")]
    outcomes, matched, named_at = [], [], []
    for part in parts:
        label, value = part["label"], judge.part_of(typed, part["name"], len(parts) == 1)
        if judge.blank(value):
            outcomes.append(Outcome(TODO, f"{label}: not answered yet"))
            continue
        size = int(np.prod(part["shape"])) if part["shape"] else 1
        try:
            got = qkv_answers.parse_numbers(value, size, problem.get("symbols", {}).get(student))
        except qkv_answers.AnswerFormatError as err:
            outcomes.append(Outcome(FAIL, f"{label}: {err}"))
            continue
        if got.size != size:
            outcomes.append(Outcome(FAIL, f"{label}: {qkv_answers.wrong_count(size, got.size, value)}"))
            continue
        got = got.reshape(part["shape"])  # a flat list for a matrix, or [x] for a scalar, is fine
        right, named = match_numbers(data, student, problem, part, specs[part["name"]], got, mistakes)
        if right:
            outcomes.append(Outcome(PASS, f"{label}: correct"))
            continue
        matched += [(h, part["name"]) for h in named]
        tol = part["tolerance"]
        outcomes.append(Outcome(FAIL, f"{label}: {qkv_answers.not_close(tol['abs'], tol['rel'])}"))
        named_at.append((outcomes[-1], set(named)))
    # the mistakes named as the grader names them (most parts explained first, none another explains), at their parts
    messages, kept = {m["label"]: m["message"] for m in mistakes}, diagnosis.written_mistakes(matched)
    for outcome, named_here in named_at:
        outcome.named = [messages[h] for h in kept if h in named_here]
        outcome.details = [diagnosis.written_mistake_text(message) for message in outcome.named]
    return outcomes


def _answer_verdict(data, problem, student, canonical: str, entry=None, salted=None) -> Tuple[bool, Optional[str]]:
    """(right?, the message of the mistake it is) for a shape, true/false or choice id: one key. `entry` is the
    part of the problem's data that holds the digests (a follow-up's), `salted` the id its salt names."""
    entry = problem if entry is None else entry
    key = _answer_key(data, student, {"id": salted or problem["id"]}, canonical)
    if sealed.tag(key, "right") == entry["digests"][student]["answer"]:
        return True, None
    for mistake in entry.get("misconceptions", {}).get(student, []):
        if sealed.tag(key, "mistake") == mistake["digests"]["answer"]:
            return False, mistake["message"]
    return False, None


def _shape(data, problem, student, typed, who="") -> List[Outcome]:
    symbols = problem.get("symbols_of", {}).get(student, problem["symbols"])  # a student's own drawn numbers
    try:
        dims = tuple(qkv_answers.evaluate_dim(d, symbols) for d in qkv_answers.parse_shape(typed))
    except qkv_answers.AnswerFormatError as err:
        return [Outcome(FAIL, str(err))]
    right, mistake = _answer_verdict(data, problem, student, "x".join(dims))
    if right:
        return [Outcome(PASS, "correct shape")]
    return [Outcome(FAIL, mistake or qkv_answers.not_the_shape(typed), named=[mistake] if mistake else [])]


def _letter_to_id(entry: Dict[str, Any], who: str, typed: Any) -> str:
    """The id of the choice whose letter, in this student's own order (the class's when none), was typed."""
    orders = entry["orders"]
    order = orders.get(who) or orders[CLASS]
    return judge.choice_at(order, qkv_answers.parse_choice(typed, len(order)))


def _choice_outcome(data, problem, student, typed, who, entry=None, salted=None, label="") -> Outcome:
    entry = problem if entry is None else entry
    try:
        got = _letter_to_id(entry, who, typed)
    except qkv_answers.AnswerFormatError as err:
        return Outcome(FAIL, label + str(err))
    right, mistake = _answer_verdict(data, problem, student, got, entry, salted)
    if right:
        return Outcome(PASS, label + "correct")
    return Outcome(FAIL, label + (mistake or qkv_answers.not_the_choice(typed)), named=[mistake] if mistake else [])


def _follow_up(data, problem, student, typed, who) -> Outcome:
    follow = problem["follow_up"]
    label = "follow-up: "
    if judge.blank(typed):
        return Outcome(TODO, label + "not answered yet")
    salted = problem["id"] + "/follow_up"
    if follow["form"] == "choice":
        return _choice_outcome(data, problem, CLASS, typed, who, follow, salted, label)
    if follow["form"] == "shape":
        try:
            dims = tuple(qkv_answers.evaluate_dim(d, follow["symbols"]) for d in qkv_answers.parse_shape(typed))
        except qkv_answers.AnswerFormatError as err:
            return Outcome(FAIL, label + str(err))
        right, _ = _answer_verdict(data, problem, CLASS, "x".join(dims), follow, salted)
        return Outcome(PASS, label + "correct shape") if right else \
            Outcome(FAIL, label + qkv_answers.not_the_shape(typed))
    part = follow["part"]
    try:
        got = qkv_answers.parse_numbers(typed, 1)
    except qkv_answers.AnswerFormatError as err:
        return Outcome(FAIL, label + str(err))
    if got.size != 1:
        return Outcome(FAIL, f"{label}expected 1 number, got {got.size}")
    right, _ = match_numbers(data, CLASS, {"id": problem["id"]}, part, follow["digests"][CLASS], got.reshape(()), [])
    tol = part["tolerance"]
    return Outcome(PASS, label + "correct") if right else \
        Outcome(FAIL, label + qkv_answers.not_close(tol["abs"], tol["rel"]))


def _true_false(data, problem, student, typed, who="") -> List[Outcome]:
    verdict_typed = judge.part_of(typed, "answer", True)  # a bare value is the verdict alone
    outcomes = []
    if judge.blank(verdict_typed):
        outcomes.append(Outcome(TODO, "true or false: not answered yet"))
    else:
        try:
            got = qkv_answers.parse_bool(verdict_typed)
        except qkv_answers.AnswerFormatError as err:
            outcomes.append(Outcome(FAIL, "true or false: " + str(err)))
        else:
            if _answer_verdict(data, problem, student, "true" if got else "false")[0]:
                outcomes.append(Outcome(PASS, "true or false: correct"))
            else:
                outcomes.append(Outcome(FAIL, "true or false: the statement is " + ("false" if got else "true")))
    if "follow_up" in problem:
        outcomes.append(_follow_up(data, problem, student, judge.part_of(typed, "follow_up", False), who))
    correction = typed.get("correction") if isinstance(typed, dict) else None
    if isinstance(correction, str) and correction.strip():
        outcomes[-1].details.append("(your written correction is read by your instructor, not by this check)")
    return outcomes


def _choice(data, problem, student, typed, who="") -> List[Outcome]:
    return [_choice_outcome(data, problem, student, typed, who)]


# by the judge each written kind names in selfcheck.json (`judge`: its Kind.selfcheck_judge), not by the kind's name
WRITTEN = {"numbers": _numeric, "dimensions": _shape, "verdict": _true_false, "choice": _choice}


def check_written(data: Dict[str, Any], problem: Dict[str, Any], typed: Any, student: str = "") -> List[Outcome]:
    """Verdicts on one written answer, as typed (None: not answered yet)."""
    key, why = student_key(data, student)
    who = key or ""  # the student's own order of choices is theirs even where the digests are the class's
    if key is not None and key not in problem["digests"]:
        key = CLASS if CLASS in problem["digests"] else None
    typed = plain(typed)
    if judge.unanswered(typed):  # the grader's rule
        return [Outcome(TODO, "not answered yet")]
    if key is None:
        return [Outcome(FAIL, why)]
    if not sealed.kdf_available():
        return [Outcome(TODO, NO_KDF)]
    try:
        return WRITTEN[problem["judge"]](data, problem, key, typed, who)
    except qkv_answers.AnswerFormatError as err:  # a parser's message is always a format hint
        return [Outcome(FAIL, str(err))]

