"""Stage 1, the question bank: YAML problem files in, typed and validated `Problem`s out.

model.py (the schema), load.py (YAML -> models), inputs.py (test input specs ->
arrays), variants.py (parameters -> numbers and answers), render.py (templates
-> Markdown), answers.py (typed answers -> verdicts), outputs.py (judging
function outputs), validate.py (`qkv validate`).
"""

from autograder.bank.load import Bank, load_bank, load_bank_strict

__all__ = ["Bank", "load_bank", "load_bank_strict"]
