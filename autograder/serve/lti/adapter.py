"""PyLTI1p3 on Starlette: the library's request, cookie, session and launch-data abstractions, with the launch
values in the service's database (gradebook/lti.py) rather than a web framework's session or cache.

Each request gets its own adapter objects: a request's parameters and cookies are read whole before the library
runs (in a worker thread), and the cookies it sets are put on the response afterwards.
"""

from __future__ import annotations

import re
import time
from typing import Any, Iterator, Mapping, Optional

import jwt
import requests
from jwt.types import Options
from pylti1p3.cookie import CookieService
from pylti1p3.exception import LtiException
from pylti1p3.launch_data_storage.base import LaunchDataStorage
from pylti1p3.message_launch import MessageLaunch
from pylti1p3.oidc_login import OIDCLogin
from pylti1p3.redirect import Redirect
from pylti1p3.request import Request
from pylti1p3.session import SessionService
from pylti1p3.tool_config import ToolConfDict
from starlette.responses import RedirectResponse, Response

from autograder.grade.gradebook.lti import LtiStore

_NEXT = re.compile(r'<([^>]*)>\s*;\s*rel="?next"?', re.IGNORECASE)
PLATFORM_SECONDS = 10.0  # the longest a platform's JWKS or token endpoint may take to answer
STATE_COOKIE_PATH = "/lti/"  # the state cookie goes back only with the launch
# what a login initiation leaves (anyone may start one, so it must not last the library's default day) and a
# launch's values, kept long enough for an instructor to pick an assignment after a deep-linking launch
LAUNCH_SECONDS = 600
# a platform's keys, fetched once per this long rather than on every launch (a forged one too); a platform that
# rotates its keys is believed after at most this long
KEY_SET_SECONDS = 300
# PyJWT checks `exp` only when present, so a token without one would never expire; `aud` is checked against the
# registration's client id by the library (validate_registration)
_JWT_CHECKS: Options = {"verify_aud": False, "require": ["exp", "iat"]}


class Platforms(ToolConfDict):
    """The library's dict of registrations, where an issuer the course does not list is a refusal (LtiException)
    and not the bare Exception the library raises for it."""

    def get_iss_config(self, iss: Any, client_id: Optional[str] = None):
        if not isinstance(iss, str) or self._config is None or iss not in self._config:
            raise LtiException(f"the issuer {str(iss)[:200]!r} is not a platform of this course")
        return super().get_iss_config(iss, client_id)


class LtiRequest(Request):
    def __init__(self, params: Mapping[str, str], cookies: Mapping[str, str], secure: bool):
        super().__init__()
        self._params, self._cookies, self._secure = dict(params), dict(cookies), secure

    @property
    def session(self):  # the launch values live in LtiStore, never in a framework session
        raise NotImplementedError

    def is_secure(self) -> bool:
        return self._secure

    def get_param(self, key: str) -> str:
        # the library's contract is a string, a missing parameter empty: it tests each for truth, never for None
        return self._params.get(key, "")

    def get_cookie(self, key: str) -> Optional[str]:
        return self._cookies.get(key)


class CookieJar(CookieService):
    """The OIDC state cookie: read from the request, set on the response. Behind HTTPS it is SameSite=None, so it
    comes back with the launch the platform POSTs from its own site; over plain HTTP (tests on loopback) a
    browser would drop such a cookie, so it is Lax there."""

    def __init__(self, request: LtiRequest):
        self._request = request
        self._pending: dict[str, tuple[str, Optional[int]]] = {}

    def _key(self, name: str) -> str:
        return f"{self._cookie_prefix}-{name}"

    def get_cookie(self, name: str) -> Optional[str]:
        return self._request.get_cookie(self._key(name))

    def set_cookie(self, name: str, value: Any, exp: Optional[int] = 3600) -> None:
        self._pending[self._key(name)] = (str(value), exp)

    def apply(self, response: Response) -> Response:
        secure = self._request.is_secure()
        for key, (value, exp) in self._pending.items():
            response.set_cookie(key, value, max_age=exp, path=STATE_COOKIE_PATH, httponly=True, secure=secure,
                                samesite="none" if secure else "lax")
        return response


class StoredValues(LaunchDataStorage):
    """PyLTI1p3's key-value storage on LtiStore. No per-browser session id: every key already holds a random
    id (a nonce, a state, a launch id), and the state is bound to the browser by its cookie."""

    def __init__(self, store: LtiStore):
        super().__init__()
        self.store = store

    def get_session_cookie_name(self) -> Optional[str]:
        return None

    def can_set_keys_expiration(self) -> bool:
        return True

    def get_value(self, key: str) -> Any:
        return self.store.get(self._prepare_key(key), time.time())

    def set_value(self, key: str, value: Any, exp: Optional[int] = None) -> None:
        now = time.time()
        self.store.put(self._prepare_key(key), value, now + (exp or 3600), now)

    def check_value(self, key: str) -> bool:
        return self.get_value(key) is not None


class Sessions(SessionService):
    """The library's session service on StoredValues, with one change: a nonce is spent by the launch that
    shows it (the library only checks that it exists, so a replayed id_token would sign in again)."""

    _launch_data_lifetime = LAUNCH_SECONDS

    def __init__(self, values: StoredValues):  # not super's: it reads a framework session, which there is none of
        self.data_storage = self._values = values

    def check_nonce(self, nonce: str) -> bool:
        values = self._values
        return values.store.take(values._prepare_key(self._get_key("nonce", nonce)), time.time()) is not None


class _Redirect(Redirect):
    def __init__(self, location: str, cookies: CookieJar):
        self._location, self._cookies = location, cookies

    def do_redirect(self) -> Response:
        return self._cookies.apply(RedirectResponse(self._location, status_code=302))

    do_js_redirect = do_redirect  # the pages run no inline script (the CSP): a plain redirect either way

    def set_redirect_url(self, location: str) -> None:
        self._location = location

    def get_redirect_url(self) -> str:
        return self._location


class Login(OIDCLogin):
    def get_redirect(self, url: str) -> Redirect:
        return _Redirect(url, self._cookie_service)


class Launch(MessageLaunch):
    def __init__(self, request: LtiRequest, tool_config: Any, values: StoredValues, cookies: CookieJar):
        super().__init__(request, tool_config, Sessions(values), cookies, values, platform_session())
        self.set_public_key_caching(values, KEY_SET_SECONDS)

    def _get_request_param(self, key: str) -> str:
        return self._request.get_param(key)

    def validate_jwt_signature(self) -> Launch:
        """The library's check with PyJWT's `require` option, which its options (flags only) cannot carry."""
        public_key, algorithm = self.get_public_key()
        try:
            jwt.decode(self._get_id_token(), public_key, algorithms=[algorithm], options=_JWT_CHECKS)
        except jwt.InvalidTokenError as err:
            raise LtiException(f"Can't decode id_token: {err}") from err
        return self

    def get_client_id(self) -> str:
        """The `aud` the library checks against the registration's client id. The library takes the first of a
        list; OIDC says that with several audiences `azp` names the one the token was issued to, and must be
        among them, so a token for another tool that lists this one second is not this tool's."""
        body = self._get_jwt_body()
        aud, azp = body.get("aud"), body.get("azp")
        audiences = aud if isinstance(aud, list) else [aud]
        if azp is None:
            if len(audiences) != 1:
                raise LtiException("the id_token names several audiences and no authorized party (`azp`)")
            return audiences[0] if isinstance(audiences[0], str) else ""
        if not isinstance(azp, str) or azp not in audiences:
            raise LtiException("the id_token's authorized party (`azp`) is not one of its audiences")
        return azp


class _Bounded(requests.Session):
    def request(self, *args: Any, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", PLATFORM_SECONDS)
        return super().request(*args, **kwargs)


def held(url: Any, platform: Any) -> str:
    """`url` if it lies on one of the platform's sites (Platform.service_origins), else LtiException: every address
    the LMS names (a launch's services, a class list's next page, a line item) gets the tool's access token."""
    from autograder.course.lti_settings import origin_of

    if not isinstance(url, str) or origin_of(url) not in platform.service_origins:
        raise LtiException(f"the LMS named a service address off its sites ({str(url)[:200]!r}): list its "
                           "origin in course.yaml's lti: origins if it is the LMS's")
    return url


def service_pages(connector: Any, platform: Any, url: str, scopes: list[str], accept: str,
                  most: int) -> Iterator[Any]:
    """The bodies of a paged LMS service (NRPS, AGS line items) from `url`, following `Link: rel="next"` for at
    most `most` pages, each address held to the platform's sites before the access token goes to it."""
    next_url: Optional[str] = url
    for _ in range(most):
        if not next_url:
            return
        answer = connector.make_service_request(scopes, held(next_url, platform), accept=accept,
                                                case_insensitive_headers=True)
        yield answer.get("body")
        # read here, not the library's `next_page_url`, which it lowercases (a path or query with capitals breaks)
        found = _NEXT.search(str(answer["headers"].get("link", "")).replace("\n", " "))
        next_url = found.group(1) if found else None


def platform_session() -> requests.Session:
    """The HTTP client for a platform's endpoints: the library's calls set no timeout, so a platform that never
    answers would hold a worker thread for good."""
    return _Bounded()
