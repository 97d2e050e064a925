"""The sandbox worker: the code that runs inside bubblewrap (or alone, under rlimits only), by trust tier.

Standard library, numpy (and torch on the torch track) and `qkv_runtime` only: the
pool binds this folder read-only as `qkv_worker` and the runtime beside it, and
nothing else of the project is in reach of student code. Started once per pool
slot; jobs arrive as frames on stdin, answers leave as frames on stdout
(`qkv_runtime.wire`).

| tier | module | runs student code | trusts |
|---|---|---|---|
| zygote (pid 1): forks the handler, then each job's child; waits for them and reaps | zygote.py, proctools.py | no | the grader, the handler |
| handler, one per worker: reads each job, supervises its child | handler.py, supervisor.py, proctools.py, link.py | no | the grader, the zygote; checks every frame of the child |
| child, one per job, forked by the zygote | child.py, job.py, confine.py, seccomp.py | yes, after confining itself | the handler for its job; nothing it hears back |
| grandchild, one per unbatched problem | child.py (`run_calls`) | yes | — |

Nothing forks from the handler, which holds what it read of earlier jobs: a child is a
copy of the zygote, which never reads a job, and gets its own job from the handler on a
pipe. The zygote and the handler are not dumpable; the child's seccomp filter denies it
signals and traces aimed at them (and at the pool when it is visible), so a
submission can neither read their pipes nor stop them, even under the same uid.
"""
