"""A small client of JupyterHub's REST API, for a service the hub manages: the OAuth code exchanged for a token,
and the user a token belongs to (its name, groups, roles and the scopes it carries).

Standard library only (urllib), blocking: the web app calls it in a worker thread. Every reply is bounded and read
as JSON of the shape the hub's documentation gives (docs: REST API, "Authenticate a user"); anything else is a
HubError with one line, never the token.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from autograder.errors import QkvError

REPLY_BYTES = 256 * 1024
REQUEST_SECONDS = 15.0


class HubError(Exception):
    """The hub could not be asked, or answered as it does not: one line."""


@dataclass(frozen=True)
class HubUser:
    name: str
    groups: frozenset[str]
    roles: frozenset[str]
    scopes: frozenset[str]  # those of the token that named the user


@dataclass(frozen=True)
class HubEnvironment:
    """What JupyterHub hands a managed service (services.service.Service.start)."""

    api_url: str  # e.g. http://127.0.0.1:8081/hub/api
    api_token: str  # the service's own token, also its OAuth client secret
    prefix: str  # e.g. /services/qkv/
    client_id: str  # service-NAME
    callback: str  # e.g. /services/qkv/oauth_callback
    service: str  # the service's name
    hub_prefix: str  # e.g. /hub/: where the browser finds the hub's authorize page

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] = os.environ) -> "HubEnvironment":
        missing = [k for k in ("JUPYTERHUB_API_URL", "JUPYTERHUB_API_TOKEN", "JUPYTERHUB_SERVICE_PREFIX")
                   if not environ.get(k)]
        if missing:
            raise QkvError("course.yaml", f"has a `jupyterhub:` section, but {', '.join(missing)} is not set: run "
                                          "qkv serve as a service of the hub (docs/jupyterhub.md)")
        prefix = "/" + environ["JUPYTERHUB_SERVICE_PREFIX"].strip("/") + "/"
        service = environ.get("JUPYTERHUB_SERVICE_NAME") or prefix.rstrip("/").rsplit("/", 1)[-1]
        base = "/" + environ.get("JUPYTERHUB_BASE_URL", "/").strip("/")
        return cls(environ["JUPYTERHUB_API_URL"].rstrip("/"), environ["JUPYTERHUB_API_TOKEN"], prefix,
                   environ.get("JUPYTERHUB_CLIENT_ID") or f"service-{service}",
                   environ.get("JUPYTERHUB_OAUTH_CALLBACK_URL") or prefix + "oauth_callback", service,
                   base.rstrip("/") + "/hub/")

    @property
    def access_scopes(self) -> frozenset[str]:
        """A token carrying one of these may use the service (what the hub grants for `access:services`)."""
        return frozenset({"access:services", f"access:services!service={self.service}"})


@dataclass(frozen=True)
class HubApi:
    env: HubEnvironment

    def authorize_url(self, state: str) -> str:
        """Where the browser goes to sign in at the hub (a path on the hub's own address)."""
        query = urllib.parse.urlencode({"client_id": self.env.client_id, "redirect_uri": self.env.callback,
                                        "response_type": "code", "state": state})
        return f"{self.env.hub_prefix}api/oauth2/authorize?{query}"

    def token_for_code(self, code: str) -> str:
        reply = self._call("POST", "/oauth2/token", None, {
            "client_id": self.env.client_id, "client_secret": self.env.api_token, "grant_type": "authorization_code",
            "code": code, "redirect_uri": self.env.callback})
        token = reply.get("access_token") if reply else None
        if not isinstance(token, str) or not token:
            raise HubError("the hub did not give a token for the sign-in code")
        return token

    def user_for_token(self, token: str) -> Optional[HubUser]:
        """The user `token` belongs to (a user's or their server's), None when the hub does not know the token."""
        reply = self._call("GET", "/user", token, None)
        if reply is None or reply.get("kind", "user") != "user":  # a service's token names no user
            return None
        return _user(reply)

    def roles_of(self, name: str) -> frozenset[str]:
        """The hub roles of user `name`, read with the service's own token (its role needs read:roles:users)."""
        reply = self._call("GET", f"/users/{urllib.parse.quote(name, safe='')}", self.env.api_token, None)
        return _user(reply).roles if reply else frozenset()

    def _call(self, method: str, path: str, token: Optional[str], form: Optional[dict[str, str]]) -> Optional[dict]:
        """The hub's JSON reply, None for 401/403/404 (an unknown token or user), HubError for anything else."""
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        request = urllib.request.Request(self.env.api_url + path, data=data, method=method)
        if token is not None:
            request.add_unredirected_header("Authorization", f"token {token}")
        request.add_header("Accept", "application/json")
        try:
            with urllib.request.build_opener(_NoRedirect).open(request, timeout=REQUEST_SECONDS) as response:
                raw = response.read(REPLY_BYTES + 1)
        except urllib.error.HTTPError as err:
            if err.code in (401, 403, 404):
                return None
            raise HubError(f"the hub answered HTTP {err.code} to {method} {path.split('?')[0]}") from None
        except (OSError, ValueError) as err:
            raise HubError(f"cannot reach the hub at {self.env.api_url}: "
                           f"{getattr(err, 'reason', None) or type(err).__name__}") from None
        if len(raw) > REPLY_BYTES:
            raise HubError(f"the hub's reply to {path} is over {REPLY_BYTES // 1024} KiB")
        try:
            reply = json.loads(raw)
        except (ValueError, RecursionError):
            reply = None
        if not isinstance(reply, dict):
            raise HubError(f"the hub's reply to {path} is not a JSON object")
        return reply


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # an API answers; a redirect (to a login page) is no user


def _user(model: Mapping[str, Any]) -> HubUser:
    name = model.get("name")
    if not isinstance(name, str) or not name or len(name) > 255:
        raise HubError("the hub's user model has no name")

    def names(key: str) -> frozenset[str]:
        value = model.get(key) or []
        return frozenset(v for v in value if isinstance(v, str)) if isinstance(value, list) else frozenset()
    return HubUser(name, names("groups"), names("roles"), names("scopes"))
