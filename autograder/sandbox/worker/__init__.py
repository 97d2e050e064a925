"""The sandbox worker: the code that runs inside bubblewrap (or alone, under rlimits only), by trust tier.

Standard library, numpy (and torch on the torch track) and `qkv_runtime` only: the
pool binds this folder read-only as `qkv_worker` and the runtime beside it, and
nothing else of the project is in reach of student code. Started once per pool
slot; jobs arrive as frames on stdin, answers leave as frames on stdout
(`qkv_runtime.wire`).

| tier | module | runs student code | trusts |
|---|---|---|---|
| zygote (pid 1) | zygote.py | no | the grader |
| handler, one per job | handler.py, supervisor.py, proctools.py | no | the grader; checks every frame of the child |
| child, one per job | child.py, confine.py, seccomp.py | yes, after confining itself | nothing it hears back |
| grandchild, one per unbatched problem | child.py (`run_calls`) | yes | — |

The zygote and the handler are not dumpable; the child's seccomp filter denies it
signals and traces aimed at them (and at the pool when it is visible), so a
submission can neither read their pipes nor stop them, even under the same uid.
"""
