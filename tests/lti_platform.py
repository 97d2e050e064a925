"""A local LTI 1.3 platform for the tests: an LMS as the tool sees it, a real HTTP server on a loopback port.

It has its own RSA key and JWKS, an OIDC authorization endpoint that answers the tool's login redirect with the
form a browser would post back to the tool (an id_token it signed, and the tool's state), and, for what a test
makes go wrong, a second key under the same `kid`, and claims to override in the next id_token it signs. Its grade
service (AGS: line items and their scores) takes only access tokens from its OAuth2 token endpoint, which gives
them for a client_credentials grant whose JWT assertion the tool signed with the key of the tool's own JWKS.
Its roster service (NRPS) lists `members`, behind the same tokens, with a `Link: rel="next"` to `members_next` when a
test sets one. It can be stopped and started again on the same port, as an LMS that went away for a while. It is
registered as a Canvas (`lms: canvas`): a user's `custom` claims carry their Canvas user id, as Canvas's do.
"""

from __future__ import annotations

import html
import json
import threading
import time
import uuid
import secrets
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional
from urllib.parse import parse_qs, urlsplit

import httpx

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwcrypto.jwk import JWK

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
ROLE = "http://purl.imsglobal.org/vocab/lis/v2/membership#"
LEARNER, INSTRUCTOR = ROLE + "Learner", ROLE + "Instructor"
TA = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"  # a sub-role of Instructor
KID = "platform-key-1"
CONTEXT = "course-1"  # the LMS course the launches come from
TOKEN_SECONDS = 300
AGS = "https://purl.imsglobal.org/spec/lti-ags/"
NRPS_CLAIM = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
AGS_SCOPES = [AGS + "scope/lineitem", AGS + "scope/score", AGS + "scope/result.readonly"]


def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def public_jwk(key: rsa.RSAPrivateKey, kid: str = KID) -> dict:
    pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    found = json.loads(JWK.from_pem(pem).export_public())
    found.update(kid=kid, alg="RS256", use="sig")
    return found


@dataclass(frozen=True)
class User:
    sub: str
    roles: tuple[str, ...]
    email: str = ""
    name: str = ""
    custom: dict = field(default_factory=dict)  # the custom claim (Canvas: canvas_user_id, ...)
    sourced_id: str = ""  # lis person_sourcedid (Canvas: the SIS User ID)


@dataclass
class Platform:
    client_id: str = "qkv-tool-client"
    deployment_id: str = "deployment-1"
    key: rsa.RSAPrivateKey = field(default_factory=new_key)
    other_key: rsa.RSAPrivateKey = field(default_factory=new_key)  # a forger's key, given the platform's kid
    users: dict[str, User] = field(default_factory=dict)  # by login hint
    next_claims: dict[str, Any] = field(default_factory=dict)  # merged into the next id_token (None: left out)
    sign_with_other_key: bool = False
    tool_jwks: str = ""  # the tool's key set URL, as its admin registers the tool
    lineitems: list[dict] = field(default_factory=list)
    scores: list[tuple[str, dict]] = field(default_factory=list)  # (the line item's id, the score posted)
    tokens: set[str] = field(default_factory=set)
    members: list[dict] = field(default_factory=list)  # the course's class list, as its roster service gives it
    deep_links: list[dict] = field(default_factory=list)  # the content items of each deep-linking answer taken
    members_next: str = ""  # the class list's `Link: rel="next"`, when set
    key_set_fetches: int = 0
    _server: Optional[ThreadingHTTPServer] = None
    _port: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # ------------------------------------------------------------------ running

    def start(self) -> "Platform":
        platform = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # the test's output is the tool's, not this server's
                pass

            def do_GET(self) -> None:
                self.reply("GET", b"")

            def do_POST(self) -> None:
                self.reply("POST", self.rfile.read(int(self.headers.get("content-length") or 0)))

            def reply(self, method: str, sent: bytes) -> None:
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                with platform._lock:  # one request at a time: the records stay whole
                    status, kind, body = platform.answer(method, parts.path, query, sent,
                                                         self.headers.get("authorization", ""))
                self.send_response(status)
                if parts.path == "/memberships" and platform.members_next:
                    self.send_header("link", f'<{platform.members_next}>; rel="next"')
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", self._port), Handler)  # its port again, once it has one
        self._port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def url(self) -> str:
        assert self._port, "the platform was never started"
        return f"http://127.0.0.1:{self._port}"

    @property
    def issuer(self) -> str:
        return self.url

    def course_settings(self, tool_url: str, keys: str) -> dict:
        """The `lti:` section of course.yaml that registers this platform with the tool at `tool_url` (and the
        tool with the platform)."""
        self.tool_jwks = f"{tool_url}/lti/jwks.json"
        return {"tool_url": tool_url, "keys": keys,
                "platforms": [{"issuer": self.issuer, "client_id": self.client_id, "lms": "canvas",
                               "deployment_ids": [self.deployment_id], "context_ids": [CONTEXT],
                               "auth_login_url": f"{self.url}/auth",
                               "auth_token_url": f"{self.url}/token", "key_set_url": f"{self.url}/jwks"}]}

    # ------------------------------------------------------------------ the endpoints

    def answer(self, method: str, path: str, query: dict[str, str], sent: bytes,
               authorization: str) -> tuple[int, str, bytes]:
        if (method, path) == ("GET", "/jwks"):
            self.key_set_fetches += 1
            return 200, "application/json", json.dumps({"keys": [public_jwk(self.key)]}).encode()
        if (method, path) == ("GET", "/auth"):
            return self.authorize(query)
        if (method, path) == ("POST", "/token"):
            return self.token({k: v[0] for k, v in parse_qs(sent.decode()).items()})
        if (method, path) == ("POST", "/deep-link-return"):
            return self.deep_link_return(parse_qs(sent.decode()).get("JWT", [""])[0])
        if authorization.removeprefix("Bearer ") not in self.tokens:
            return 401, "application/json", b'{"error": "no valid access token"}'
        if (method, path) == ("GET", "/memberships"):
            return 200, "application/vnd.ims.lti-nrps.v2.membershipcontainer+json", json.dumps(
                {"id": f"{self.url}/memberships", "context": {"id": CONTEXT}, "members": self.members}).encode()
        if path == "/lineitems":
            return self.lineitems_of(method, sent)
        if method == "POST" and path.endswith("/scores"):
            item = f"{self.url}{path.removesuffix('/scores')}"
            if not any(line["id"] == item for line in self.lineitems):
                return 404, "application/json", b'{"error": "no such line item"}'
            self.scores.append((item, json.loads(sent)))
            return 204, "application/json", b""
        return 404, "text/plain", b"not found"

    def token(self, form: dict[str, str]) -> tuple[int, str, bytes]:
        """OAuth2 client_credentials with a JWT assertion (LTI's security framework): checked against the tool's
        published key set, its issuer and subject the tool's client id, its audience this endpoint."""
        if form.get("grant_type") != "client_credentials" or \
                form.get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer":
            return 400, "application/json", b'{"error": "unsupported_grant_type"}'
        try:
            claims = self.tool_claims(form.get("client_assertion", ""), f"{self.url}/token")
        except jwt.InvalidTokenError as err:
            return 401, "application/json", json.dumps({"error": f"invalid_client: {err}"}).encode()
        if claims.get("sub") != self.client_id:
            return 401, "application/json", b'{"error": "invalid_client"}'
        token = secrets.token_urlsafe(16)
        self.tokens.add(token)
        return 200, "application/json", json.dumps({"access_token": token, "token_type": "Bearer",
                                                    "expires_in": 3600, "scope": form.get("scope", "")}).encode()

    def tool_claims(self, token: str, audience: str) -> dict:
        """What the tool signed, checked against the key set it publishes; raises jwt.InvalidTokenError."""
        keys = jwt.PyJWKSet.from_dict(httpx.get(self.tool_jwks, timeout=30).json())
        try:
            key = keys[jwt.get_unverified_header(token).get("kid")].key
        except KeyError:
            raise jwt.InvalidTokenError("no key of the tool's has that kid") from None
        return jwt.decode(token, key, algorithms=["RS256"], audience=audience, issuer=self.client_id)

    def deep_linking_claims(self) -> dict:
        """The claims that make the next id_token a deep-linking request (an instructor adding the tool)."""
        return {CLAIM + "message_type": "LtiDeepLinkingRequest",
                "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings": {
                    "deep_link_return_url": f"{self.url}/deep-link-return", "accept_types": ["ltiResourceLink"],
                    "accept_presentation_document_targets": ["iframe", "window"], "data": "platform-context-42"}}

    def deep_link_return(self, token: str) -> tuple[int, str, bytes]:
        try:
            claims = self.tool_claims(token, self.issuer)
        except jwt.InvalidTokenError as err:
            return 400, "text/plain", f"refused: {err}".encode()
        if claims.get(CLAIM + "message_type") != "LtiDeepLinkingResponse" or \
                claims.get("https://purl.imsglobal.org/spec/lti-dl/claim/data") != "platform-context-42":
            return 400, "text/plain", b"refused: not the answer to this request"
        self.deep_links.append({"deployment": claims.get(CLAIM + "deployment_id"),
                                "items": claims.get("https://purl.imsglobal.org/spec/lti-dl/claim/content_items")})
        return 200, "text/html", b"<p>added</p>"

    def lineitems_of(self, method: str, sent: bytes) -> tuple[int, str, bytes]:
        if method == "GET":
            return 200, "application/vnd.ims.lis.v2.lineitemcontainer+json", json.dumps(self.lineitems).encode()
        item = {**json.loads(sent), "id": f"{self.url}/lineitems/{uuid.uuid4().hex[:12]}"}  # never one deleted
        self.lineitems.append(item)
        return 201, "application/vnd.ims.lis.v2.lineitem+json", json.dumps(item).encode()

    def authorize(self, query: dict[str, str]) -> tuple[int, str, bytes]:
        """The OIDC authorization endpoint: checks the tool's request as a platform does, then gives the page whose
        form the browser posts to the tool's launch (the id_token and the state)."""
        expected = {"scope": "openid", "response_type": "id_token", "response_mode": "form_post", "prompt": "none",
                    "client_id": self.client_id}
        wrong = [k for k, v in expected.items() if query.get(k) != v]
        user = self.users.get(query.get("login_hint", ""))
        if wrong or user is None or not query.get("nonce") or not query.get("redirect_uri"):
            return 400, "text/plain", f"bad authorization request: {wrong or 'login_hint, nonce'}".encode()
        hint = json.loads(query.get("lti_message_hint") or "{}")
        token = self.id_token(user, query["nonce"], hint.get("target", ""), hint.get("link", "link-1"))
        fields = {"id_token": token, "state": query.get("state", "")}
        inputs = "".join(f'<input type="hidden" name="{k}" value="{html.escape(v)}">' for k, v in fields.items())
        page = f'<form id="launch" method="post" action="{html.escape(query["redirect_uri"])}">{inputs}</form>'
        return 200, "text/html; charset=utf-8", page.encode()

    def id_token(self, user: User, nonce: str, target: str, link: str) -> str:
        now = int(time.time())
        claims = {"iss": self.issuer, "aud": self.client_id, "sub": user.sub, "iat": now, "exp": now + TOKEN_SECONDS,
                  "nonce": nonce, "email": user.email, "name": user.name,
                  CLAIM + "message_type": "LtiResourceLinkRequest", CLAIM + "version": "1.3.0",
                  CLAIM + "deployment_id": self.deployment_id, CLAIM + "target_link_uri": target,
                  CLAIM + "resource_link": {"id": link}, CLAIM + "roles": list(user.roles),
                  CLAIM + "context": {"id": CONTEXT, "title": "Transformers"},
                  AGS + "claim/endpoint": {"scope": AGS_SCOPES, "lineitems": f"{self.url}/lineitems"},
                  NRPS_CLAIM: {"context_memberships_url": f"{self.url}/memberships", "service_versions": ["2.0"]}}
        if user.custom:
            claims[CLAIM + "custom"] = dict(user.custom)
        if user.sourced_id:
            claims[CLAIM + "lis"] = {"person_sourcedid": user.sourced_id}
        claims.update(self.next_claims)  # a claim set to None is left out
        claims = {k: v for k, v in claims.items() if v is not None}
        self.next_claims = {}
        key = self.other_key if self.sign_with_other_key else self.key
        self.sign_with_other_key = False
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": KID})

    # ------------------------------------------------------------------ what a browser does

    def login_params(self, hint: str, target: str, link: str = "link-1") -> dict[str, str]:
        """What the platform sends the tool's login initiation URL when `hint`'s user clicks a link to `target`."""
        return {"iss": self.issuer, "login_hint": hint, "target_link_uri": target, "client_id": self.client_id,
                "lti_deployment_id": self.deployment_id,
                "lti_message_hint": json.dumps({"target": target, "link": link})}

    def add_user(self, user: User) -> str:
        hint = uuid.uuid4().hex
        self.users[hint] = user
        return hint


__all__ = ["AGS", "CLAIM", "CONTEXT", "INSTRUCTOR", "KID", "LEARNER", "NRPS_CLAIM", "TA", "Platform", "User", "public_jwk"]
