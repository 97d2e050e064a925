"""The service's web app, its endpoints grouped by who they are for, each at module level and testable alone:

- state.py: what every endpoint shares (`ServiceState`, typed), read from the request's app;
- site.py: the doors every page goes through (the signed-in check, the form's CSRF check, the session cookie,
  the one hand-in path), which the LTI tool's launch (serve/lti/launch.py) also uses;
- account.py: signing in and out; student.py: a student's assignment, attempts, feedback and release;
  staff.py: the class for staff; api.py: the JSON routes `qkv_check.py --submit` uses; practice.py: /practice,
  when course.yaml offers it (serve/practice.py); lti.py: the routes an LMS calls, when the service is an LTI
  tool (serve/lti/).

serve/web.py puts them together into one app whose lifespan starts and stops the graders.
"""
