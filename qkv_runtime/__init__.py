"""The portable runtime: the rules every route shares, in one place.

Standard library and NumPy only, Python 3.9 or newer, no import of the engine, so
one copy of each rule serves every place it is needed:

- the engine imports it (`qkv grade`, build, validate);
- the sandbox binds it read-only next to the worker (student code runs beside it);
- the student release carries a copy for the offline self-check;
- the nbgrader source notebook embeds its sources in a locked cell, at build time.

Modules: `judge` (the rules of judging, each once: the tolerance, "not answered", the
part of an answer, choice letters, source positions), `limits` (the grading policy's
numbers), `wire` (frames between the grader and the sandbox), `values` (return values
to arrays, ANSWERS to plain data, exception text), `compare` (how an output is judged),
`diagnosis` (which mistake a failed output shows), `notebook` (how a notebook becomes a
program), `answers` (how typed answers are read), `sealed` (how the self-check keeps
answers out of the release), `nbcells` (the nbgrader test cells' helpers), `practice` (the
practice rule: mastery, misconceptions held, the next problem; the service, `qkv practice`
and the self-check choose by it).
"""
