"""An LTI 1.3 platform nobody here wrote: the PyPI package `lti1p3platform` (its registration, OIDC launch, token
endpoint, Assignment and Grade Services and Names and Role Provisioning), served on a loopback port, with launches
and class lists shaped as Canvas and as Moodle send them.

The shapes, from each LMS's documentation:
- Canvas (canvas.instructure.com/doc/api/file.lti_dev_key_config.html, file.tools_variable_substitutions.html):
  the issuer is https://canvas.instructure.com whatever the school's domain; `sub` is an opaque id; the numeric user
  id and SIS integration id come only as the custom claims the developer key asks for ($Canvas.user.id,
  $Canvas.user.sisIntegrationId), a variable it cannot fill as its own name; lis person_sourcedid is the SIS User
  ID; a TA has `membership#Instructor` and `membership/Instructor#TeachingAssistant` both; the AGS claim names the
  assignment's `lineitem` beside `lineitems`; the class list pages with `Link: rel="next"` and lists `user_id` (the
  opaque id) and the SIS id.
- Moodle (docs.moodle.org, External tool and LTI Advantage services): the issuer is the site's address; `sub` is the
  Moodle user id (a small integer); lis person_sourcedid is the user's ID number; the AGS line item URLs carry
  `?type_id=N`; the context is the course id and the deployment the tool type's id.

Only the glue is here (an HTTP handler, a store of line items and scores, the users and members a test sets): every
check of the tool's tokens and the signing of launches is the package's.
"""

from __future__ import annotations

import html
import json
import re
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional
from urllib.parse import parse_qs, urlsplit

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from lti1p3platform.exceptions import LineItemNotFoundException, LtiException
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request
from lti1p3platform.service_connector import AssignmentsGradesService, NamesRoleProvisioningService
from lti1p3platform.membership import Context

ROLE = "http://purl.imsglobal.org/vocab/lis/v2/"
LEARNER = [ROLE + "institution/person#Student", ROLE + "membership#Learner", ROLE + "system/person#User"]
CANVAS_TA = [ROLE + "institution/person#Instructor", ROLE + "membership#Instructor",
             ROLE + "membership/Instructor#TeachingAssistant", ROLE + "system/person#User"]
INSTRUCTOR = [ROLE + "institution/person#Instructor", ROLE + "membership#Instructor", ROLE + "system/person#User"]
CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
PAGE_SIZE = 4  # members a class-list page holds (Canvas's default is 10): a class of 9 is three pages


@dataclass(frozen=True)
class Person:
    """A user of the LMS: `sub` as the LMS sends it, and what else its launches and class list carry."""

    sub: str
    roles: tuple[str, ...]
    name: str = ""
    email: str = ""
    sourced_id: str = ""  # Canvas: SIS User ID; Moodle: ID number
    custom: dict = field(default_factory=dict)  # Canvas: the substituted variables


@dataclass(frozen=True)
class Shape:
    """Where an LMS puts things: its issuer, course, deployment and service paths."""

    lms: str
    issuer: str  # '' for the site's own address (Moodle)
    context: str
    deployment: str
    lineitems: str  # the container's path
    lineitem: str  # an item's path, {id} in it
    query: str  # what the LMS puts after a line item's path
    memberships: str


CANVAS = Shape("canvas", "https://canvas.instructure.com", "4dde05e8ca1973bcca9bffc13e1548820eee93a3", "12:8865aa05b4b79b64a91a86042e43af5ea8ae79eb",
               "/api/lti/courses/101/line_items", "/api/lti/courses/101/line_items/{id}", "",
               "/api/lti/courses/101/names_and_roles")
MOODLE = Shape("moodle", "", "2", "1", "/mod/lti/services.php/2/lineitems", "/mod/lti/services.php/2/lineitems/{id}/lineitem",
               "?type_id=1", "/mod/lti/services.php/CourseSection/2/bindings/1/memberships")


def _pem_pair() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


class _Request(Request):
    def build_metadata(self, request: dict) -> dict:
        return request


@dataclass
class Lms:
    """The platform, one course: `people` by login hint, `members` its class list, the line items and scores."""

    shape: Shape
    client_id: str = "10000000000001"
    people: dict[str, Person] = field(default_factory=dict)
    members: list[Person] = field(default_factory=list)
    lineitems: dict[str, dict] = field(default_factory=dict)  # by id (its URL)
    scores: list[tuple[str, dict]] = field(default_factory=list)  # (the line item's URL, the score)
    tool_url: str = ""
    _keys: tuple[str, str] = field(default_factory=_pem_pair)
    _server: Optional[ThreadingHTTPServer] = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # ------------------------------------------------------------------ running

    def start(self) -> "Lms":
        lms = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self.reply("GET", b"")

            def do_POST(self) -> None:
                self.reply("POST", self.rfile.read(int(self.headers.get("content-length") or 0)))

            def reply(self, method: str, sent: bytes) -> None:
                with lms._lock:
                    status, kind, body, headers = lms.answer(method, self.path, sent, dict(self.headers))
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def issuer(self) -> str:
        return self.shape.issuer or self.url

    def lineitem_url(self, item: str) -> str:
        return self.url + self.shape.lineitem.format(id=item) + self.shape.query

    def add_lineitem(self, label: str, maximum: float = 100.0) -> str:
        """A column an instructor made (an assignment); its URL, which launches of its link name."""
        url = self.lineitem_url(uuid.uuid4().hex[:8])
        self.lineitems[url] = {"id": url, "label": label, "scoreMaximum": maximum}
        return url

    def registration(self) -> Registration:
        private, public = self._keys
        return (Registration().set_iss(self.issuer).set_client_id(self.client_id)
                .set_deployment_id(self.shape.deployment).set_oidc_login_url(f"{self.tool_url}/lti/login")
                .set_launch_url(f"{self.tool_url}/lti/launch").set_platform_private_key(private)
                .set_platform_public_key(public).set_tool_key_set_url(f"{self.tool_url}/lti/jwks.json"))

    def config(self) -> LTI1P3PlatformConfAbstract:
        lms = self

        class Config(LTI1P3PlatformConfAbstract):
            def init_platform_config(self, **kwargs: Any) -> None:
                pass

            def get_registration_by_params(self, **kwargs: Any) -> Registration:
                return lms.registration()

        config = Config()
        config.get_registration()
        return config

    def course_settings(self, tool_url: str, keys: str, **more: Any) -> dict:
        """The `lti:` section of course.yaml as docs/lti.md's checklist for this LMS fills it."""
        self.tool_url = tool_url
        platform = {"issuer": self.issuer, "client_id": self.client_id, "lms": self.shape.lms,
                    "deployment_ids": [self.shape.deployment], "context_ids": [self.shape.context],
                    "auth_login_url": f"{self.url}/auth", "auth_token_url": f"{self.url}/token",
                    "key_set_url": f"{self.url}/jwks"}
        if self.shape.lms == "canvas":  # the school's Canvas domain, which frames the tool and serves its APIs
            platform["origins"] = [self.url]
        return {"tool_url": tool_url, "keys": keys, "platforms": [platform], **more}

    # ------------------------------------------------------------------ a user's click on a link

    def login_url(self, person: Person, lineitem: Optional[str], target: str) -> str:
        """Where the LMS sends the browser when `person` opens a link (its line item `lineitem`, if any)."""
        hint = uuid.uuid4().hex
        self.people[hint] = person
        lms = self

        class Login(OIDCLoginAbstract):
            def set_lti_message_hint(self, **kwargs: Any) -> None:
                self._lti_message_hint = json.dumps(kwargs)

            def get_redirect(self, url: str) -> str:
                return url

        login = Login(_Request({"get_data": {}, "form_data": {}}), lms.config()).set_launch_url(target)
        login.set_lti_message_hint(lineitem=lineitem or "", target=target)
        return login.initiate_login(hint)

    def authorize(self, query: dict[str, str]) -> tuple[int, str, bytes]:
        person = self.people.get(query.get("login_hint", ""))
        if person is None:
            return 400, "text/plain", b"no such user"
        hint = json.loads(query.get("lti_message_hint") or "{}")
        lms = self

        class Launch(LTIAdvantageMessageLaunchAbstract):
            def prepare_launch(self, preflight: dict) -> None:
                self.set_user_data(person.sub, list(person.roles), person.name or None, person.email or None)
                self.set_resource_link_claim(f"link-{hint.get('lineitem', '')[-8:] or 'none'}")
                self.set_launch_context_claim(lms.shape.context, [ROLE.replace("vocab/lis/v2/", "") +
                                              "course#CourseOffering"], "Transformers 2026", "TF26")
                self.set_launch_url(hint.get("target") or f"{lms.tool_url}/")
                self.set_ags(lms.url + lms.shape.lineitems + lms.shape.query, hint.get("lineitem") or None)
                self.set_nrps(lms.url + lms.shape.memberships)
                extra = {CLAIM + "tool_platform": {"product_family_code": lms.shape.lms, "name": "Uni"}}
                if person.sourced_id:
                    extra[CLAIM + "lis"] = {"person_sourcedid": person.sourced_id}
                self.set_extra_claims(extra)
                if person.custom:
                    self.set_custom_parameters_claim(dict(person.custom))

            def render_launch_form(self, launch_data: dict, **kwargs: Any) -> bytes:
                inputs = "".join(f'<input type="hidden" name="{k}" value="{html.escape(str(launch_data[k]))}">'
                                 for k in ("id_token", "state"))
                return (f'<form id="launch" method="post" action="{html.escape(launch_data["launch_url"])}">'
                        f"{inputs}</form>").encode()

        launch = Launch(_Request({"get_data": query, "form_data": {}}), self.config())
        return 200, "text/html; charset=utf-8", launch.lti_launch()

    # ------------------------------------------------------------------ the endpoints

    def answer(self, method: str, path: str, sent: bytes, headers: dict) -> tuple[int, str, bytes, dict]:
        parts = urlsplit(path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        config = self.config()
        if (method, parts.path) == ("GET", "/jwks"):
            return 200, "application/json", json.dumps(config.get_jwks()).encode(), {}
        if (method, parts.path) == ("GET", "/auth"):
            return (*self.authorize(query), {})
        if (method, parts.path) == ("POST", "/token"):
            form = {k: v[0] for k, v in parse_qs(sent.decode()).items()}
            try:
                return 200, "application/json", json.dumps(config.get_access_token(form)).encode(), {}
            except (LtiException, Exception) as err:  # the package's refusal, whatever its class
                return 401, "application/json", json.dumps({"error": str(err)}).encode(), {}
        request = _Request({"method": method, "get_data": dict(query), "form_data": {},
                            "headers": {"Authorization": headers.get("Authorization") or headers.get("authorization", "")},
                            "json": json.loads(sent) if sent else None, "path": parts.path})
        if parts.path == self.shape.memberships:
            for key in ("page", "limit"):
                if key in request.get_data:
                    request.get_data[key] = int(request.get_data[key])
            request.get_data.setdefault("limit", PAGE_SIZE)
            return self._members(request, config)
        return self._grades(method, parts.path, request, config)

    def _members(self, request: _Request, config: LTI1P3PlatformConfAbstract) -> tuple[int, str, bytes, dict]:
        lms = self

        class Members(NamesRoleProvisioningService):
            def get_member_data_page(self, page: int = 1, limit: Optional[int] = None, **_: Any) -> dict:
                size = limit or len(lms.members) or 1
                chosen = lms.members[(page - 1) * size: page * size]
                return {"content": [lms.member(p) for p in chosen], "has_next": page * size < len(lms.members)}

            def get_context_by_id(self) -> Context:
                return Context(id=lms.shape.context, label="TF26", title="Transformers 2026")

        answer = Members(request, config, self.url + self.shape.memberships).handle_resp(
            Members(request, config, self.url + self.shape.memberships).handle_get_members)
        links = {}
        if answer.code == 200 and answer.result.get("next"):
            links["link"] = f'<{answer.result.pop("next")}>; rel="next"'
        return answer.code, answer.media_type, json.dumps(answer.result or {"error": answer.message}).encode(), links

    def member(self, person: Person) -> dict:
        shown = {"status": "Active", "user_id": person.sub, "roles": list(person.roles), "name": person.name,
                 "email": person.email}
        return {**shown, **({"lis_person_sourcedid": person.sourced_id} if person.sourced_id else {})}

    def _grades(self, method: str, path: str, request: _Request,
                config: LTI1P3PlatformConfAbstract) -> tuple[int, str, bytes, dict]:
        lms = self
        container = self.url + self.shape.lineitems + self.shape.query

        class Grades(AssignmentsGradesService):
            def find_lineitems(self, page: int = 1, limit: Optional[int] = None, **_: Any) -> dict:
                return {"content": list(lms.lineitems.values()), "has_next": False}

            def find_lineitem(self, line_item_id: str) -> dict:
                if line_item_id not in lms.lineitems:
                    raise LineItemNotFoundException()
                return lms.lineitems[line_item_id]

            def create_lineitem(self, creation_data: dict) -> dict:
                url = lms.lineitem_url(uuid.uuid4().hex[:8])
                lms.lineitems[url] = {**creation_data, "id": url}
                return lms.lineitems[url]

            def update_lineitem(self, update_data: dict) -> dict:
                raise LineItemNotFoundException()

            def delete_lineitem(self, line_item_id: str) -> None:
                lms.lineitems.pop(line_item_id)

            def update_score(self, line_item_id: str, score: dict):
                from lti1p3platform.score import UpdateScoreStatus
                if line_item_id not in lms.lineitems:
                    raise LineItemNotFoundException()
                lms.scores.append((line_item_id, score))
                return UpdateScoreStatus.SUCCESS

            def get_results(self, line_item_id: str, **_: Any) -> dict:
                return {"content": [], "has_next": False}

        service = Grades(request, config, container)
        item = re.fullmatch(re.escape(self.shape.lineitem).replace(re.escape("{id}"), "([0-9a-f]{8})")
                            + "(/scores)?", path)
        if path == self.shape.lineitems:
            answer = service.handle_resp(service.handle_get_lineitems if method == "GET"
                                         else service.handle_create_lineitem)
        elif item and item.group(2) and method == "POST":
            answer = service.handle_resp(service.handle_update_score,
                                         line_item_id=self.lineitem_url(item.group(1)))
        elif item and method == "GET":
            answer = service.handle_resp(service.handle_get_lineitem, line_item_id=self.lineitem_url(item.group(1)))
        else:
            return 404, "text/plain", b"not found", {}
        result = answer.result
        if isinstance(result, dict) and "content" in result:  # a page of line items: the list, as AGS has it
            result = result["content"]
        return answer.code, answer.media_type, json.dumps(result if result is not None else {}).encode(), {}
