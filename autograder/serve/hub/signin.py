"""Signing in through the hub: the OAuth routes of the browser, and hub tokens on the JSON routes of --submit.

The browser: /signin sends it to the hub's authorize page with a fresh `state` (kept in a cookie of this service,
with where to go after); /oauth_callback takes the hub's code back only with that state, trades it for a token,
asks the hub whose it is, and opens the service's own session (app/site.py's session_response), as a token sign-in or an LMS
launch does: from there every access rule, the CSRF token and the session's lifetime are the service's.

--submit: a token without the shape of the service's own (`account.secret`) is a hub token (the user's
JUPYTERHUB_API_TOKEN). The hub says whose it is and what it carries: it must carry access to this service. A failed
one counts against the client's address like a wrong service token (guard.FAILURES_ALLOWED in FAILURE_WINDOW); one
that passed is remembered by its SHA-256 for CHECKED_SECONDS, as the service's own are, since --submit polls.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import anyio
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from autograder.course.hub_settings import HubSettings
from autograder.grade.gradebook.accounts import Account, Try, token_account
from autograder.serve.guard import FAILURE_WINDOW, FAILURES_ALLOWED, same_token
from autograder.serve.hub.api import HubApi, HubEnvironment, HubError, HubUser
from autograder.serve.hub.people import NotOnRoster, person_of
from autograder.serve.signin import TOO_MANY, Outcome
from autograder.serve.app.site import local_path, refusal_page, session_response

STATE_COOKIE = "qkv_hub_state"
CHECKED_SECONDS = 60.0
BUSY_SECONDS = 60.0
NOT_VALID = "that token is not valid on this hub (mistyped, expired or revoked)"
NO_ACCESS = "that hub token does not carry access to this service (a token of another server or service?)"
REVOKED = "your access to this course was revoked: ask your instructor to reinstate you"


@dataclass
class Hub:
    """The service's hub: its API, course.yaml's `jupyterhub:` settings, and hub tokens checked lately."""

    settings: HubSettings
    api: HubApi
    _checked: dict[str, tuple[Account, float]] = field(default_factory=dict, repr=False)

    @classmethod
    def from_environ(cls, settings: HubSettings) -> "Hub":
        return cls(settings, HubApi(HubEnvironment.from_environ()))

    @property
    def prefix(self) -> str:
        return self.api.env.prefix

    def mounted(self, app: Any) -> Any:
        """The whole app under the service's prefix (prefix.py)."""
        from autograder.serve.hub.prefix import PrefixMount

        return PrefixMount(app, self.prefix)

    def owns(self, token: str) -> bool:
        """Whether `token` is for the hub to check (the service's own have the shape `account.secret`)."""
        return bool(token.strip()) and token_account(token) is None

    # ------------------------------------------------------------------ one hub user as an account

    def account_of(self, state: Any, user: HubUser) -> Account | str:
        """The account `user` signs in to, or the one sentence that refuses them."""
        person = person_of(user, state.roster, self.settings, lambda: self.api.roles_of(user.name))
        if isinstance(person, NotOnRoster):
            return person.message
        if state.accounts.is_revoked(person.id):
            return REVOKED
        return state.accounts.launched(person.id, person.role, time.time())

    # ------------------------------------------------------------------ --submit's hub token

    async def sign_in(self, state: Any, client: str, token: str) -> Outcome:
        key = hashlib.sha256(token.strip().encode()).hexdigest()
        known = self._checked.get(key)
        if known is not None and known[1] > time.time():
            return Outcome(known[0])
        waited_until = time.monotonic() + BUSY_SECONDS
        while True:
            verdict, ticket = await run_in_threadpool(state.accounts.reserve_try, [f"ip:{client}"], time.time(),
                                                      FAILURE_WINDOW, FAILURES_ALLOWED)
            if verdict is Try.REFUSED or (verdict is Try.BUSY and time.monotonic() > waited_until):
                return Outcome(None, TOO_MANY)
            if verdict is Try.GO:
                break
            await anyio.sleep(0.5)
        outcome = Outcome(None, NOT_VALID)
        try:
            outcome = await run_in_threadpool(self._check, state, token.strip())
        finally:
            await run_in_threadpool(state.accounts.settle_try, ticket, outcome.account is None)
        if outcome.account is not None:
            if len(self._checked) > 10_000:
                self._checked.clear()
            self._checked[key] = (outcome.account, time.time() + CHECKED_SECONDS)
        return outcome

    def _check(self, state: Any, token: str) -> Outcome:
        try:
            user = self.api.user_for_token(token)
        except HubError as err:
            return Outcome(None, f"the hub could not check the token: {err}")
        if user is None:
            return Outcome(None, NOT_VALID)
        if not user.scopes & self.api.env.access_scopes:
            return Outcome(None, NO_ACCESS)
        account = self.account_of(state, user)
        return Outcome(None, account) if isinstance(account, str) else Outcome(account)

    # ------------------------------------------------------------------ the browser's OAuth

    def routes(self, state: Any) -> list[Route]:
        """The routes that come before the service's own: /signin is the hub's here."""
        landing = f"/a/{next(iter(state.assignments))}" if len(state.assignments) == 1 else "/"

        async def start(request: Request) -> Response:
            next_path = local_path(request.query_params.get("next", landing))
            nonce = secrets.token_urlsafe(24)
            host = request.headers.get("host", "")
            scheme = request.headers.get("x-forwarded-proto", request.url.scheme)
            # an address of the hub's own, absolute: the prefix mount rewrites the service's paths only
            response = RedirectResponse(f"{scheme}://{host}{self.api.authorize_url(nonce)}", status_code=303)
            response.set_cookie(STATE_COOKIE, f"{nonce} {next_path}", max_age=600, httponly=True, samesite="lax",
                                secure=state.secure_cookies, path="/")
            return response

        async def callback(request: Request) -> Response:
            kept = request.cookies.get(STATE_COOKIE, "")
            nonce, _, next_path = kept.partition(" ")
            given, code = request.query_params.get("state", ""), request.query_params.get("code", "")
            if not nonce or not same_token(given, nonce) or not code or len(code) > 200:
                return refusal_page(403, "the hub's sign-in answer does not belong to a sign-in started here: "
                                         "open the service again", "Sign-in refused", back="/signin")
            try:
                account = await run_in_threadpool(self._signed_in, state, code)
            except HubError as err:
                return refusal_page(502, f"the hub could not sign you in: {err}", "Sign-in failed", back="/signin")
            if isinstance(account, str):
                return refusal_page(403, account, "Not on the roster", back="/signin")
            response = await run_in_threadpool(session_response, state, account, local_path(next_path))
            response.delete_cookie(STATE_COOKIE, path="/")
            return response

        return [Route("/signin", start, methods=["GET"]), Route("/oauth_callback", callback, methods=["GET"])]

    def _signed_in(self, state: Any, code: str) -> Account | str:
        user = self.api.user_for_token(self.api.token_for_code(code))
        if user is None:
            raise HubError("the hub did not say whose the sign-in was")
        return self.account_of(state, user)
