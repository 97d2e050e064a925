"""The service (`qkv serve`): students hand in from a browser or the release and see their score at once.

Takes built assignments (dist/NAME/: the grading bundle and the release), the roster, and a database
(a folder of SQLite files by default, or a PostgreSQL URL); gives a web app (Starlette on uvicorn)
whose pages are rendered on the server and work without JavaScript.

- course.py: which assignments are served, from where, with which limits (the manifest's `serve`).
- handin.py: one upload checked and stored as an attempt (or refused in one sentence), the same for the
  browser and `qkv_check.py --submit`.
- grader.py: background graders that claim attempts and grade and record each exactly once through the
  grading service `qkv grade` calls (grade/service.py), which keeps its late outcome.
- guard.py: the trust boundary of HTTP: bounded bodies and headers, security headers, sessions, CSRF,
  sign-in rate limits, cleaned file names.
- web.py puts the app together (its endpoints in app/, by audience; the graders started in its lifespan) and
  pages.py renders; instructors' views (instructor.py) call the classroom code the CLI calls.
- command.py: `qkv serve` and `qkv tokens`.
- hub/: the service as a JupyterHub service (course.yaml `jupyterhub:`): sign-in through the hub, hub tokens for
  --submit, the app under the hub's prefix, nbgrader's exchange graded as it fills.

Nothing accepted is lost: an attempt is in the gradebook (file included) before the student is
answered, and a restarted server grades every attempt accepted and not graded, once.
"""
