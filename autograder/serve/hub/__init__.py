"""`qkv serve` as a JupyterHub service: sign-in through the hub, hub tokens for --submit, nbgrader's exchange.

Takes the `jupyterhub:` section of course.yaml and what the hub hands a managed service in its environment
(JUPYTERHUB_API_URL, JUPYTERHUB_API_TOKEN, JUPYTERHUB_SERVICE_PREFIX, JUPYTERHUB_CLIENT_ID, ...); gives the
service's web app a few routes, a token check and a mount under the service's prefix, and a background intake.

- api.py: a small client of the hub's REST API (OAuth code for a token, the user a token belongs to).
- people.py: a hub user as a person of the course: the roster's `hub_user` column else the id (Roster.match),
  staff and instructors by the hub groups or roles course.yaml names.
- signin.py: the OAuth routes (/signin starts it, /oauth_callback ends it in a session like any other) and the
  check of a hub token on the JSON routes `qkv_check.py --submit` uses.
- prefix.py: the app mounted under JUPYTERHUB_SERVICE_PREFIX (the hub's proxy does not strip it).
- exchange.py: nbgrader's inbound folder read as the untrusted folder it is, each new submission an attempt.

web.py knows of this package in two lines: the routes to put first, and the token check (ServiceState.hub).
"""
