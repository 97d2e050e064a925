"""`qkv serve` as an LTI 1.3 tool: a student opens the assignment in the LMS and lands on it signed in, and the
score goes back to the LMS's gradebook (docs/lti.md).

Takes the `lti:` section of course.yaml (course/lti_settings.py: the tool's address, its key pair's folder, the platforms it
trusts), the service's accounts, roster and gradebooks; gives the routes an LMS calls and the `qkv lti` commands.

- launch.py: the tool, and what a launch checks (its role and roster match) and signs in; its endpoints (OIDC
  login initiation, the launch, the tool's public JWKS) are serve/app/lti.py's.
- adapter.py: PyLTI1p3 on Starlette, its launch values in the database; every check of an id_token is the
  library's, except the nonce, which is spent once here.
- deep_link.py: an instructor picks the assignment a new link opens.
- grades.py: each counted attempt's score posted (AGS) to the launch's line item, from the gradebook's outbox,
  retried with back-off.
- members.py: who an LMS user is on the roster (one rule for launches and the class list, over
  classroom/roster.Roster.match), and the LMS's class list (NRPS) against the roster, for `qkv lti sync`.
- roster_sync.py: the same sync on a schedule inside `qkv serve`.
- background.py: the loop the score poster and the class-list puller share (a thread from start until stop).
- keys.py, registration.py, command.py: the key pair, what an LMS admin enters, `qkv lti keys|config|sync`.
"""
