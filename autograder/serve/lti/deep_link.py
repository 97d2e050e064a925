"""Deep linking: an instructor adding the tool in the LMS picks which served assignment the new link opens.

The LMS's deep-linking launch (validated as any launch, and from an instructor only) shows the served assignments,
each a form carrying a one-time pick token kept with the launch; the pick answers with the signed deep-linking
response (PyLTI1p3's) in a form the instructor sends back to the LMS, with a button: the pages run no script.
"""

from __future__ import annotations

import secrets
import time
from typing import Any, Mapping

from pylti1p3.deep_link import DeepLink
from pylti1p3.deep_link_resource import DeepLinkResource
from starlette.responses import HTMLResponse

from autograder.serve.lti.adapter import Sessions, StoredValues
from autograder.serve.pages import Refusal, page

PICK_PATH = "/lti/deep-link"
PICK_SECONDS = 3600
SETTINGS = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
DEPLOYMENT = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"
_PICK = "qkv-pick-"


def picker(values: StoredValues, launch_id: str, assignments: Mapping[str, Any]) -> HTMLResponse:
    """The page of served assignments to pick from, for the deep-linking launch saved under `launch_id`."""
    token = secrets.token_urlsafe(24)
    now = time.time()
    values.store.put(_PICK + token, {"launch": launch_id}, now + PICK_SECONDS, now)
    return HTMLResponse(page("lti_pick.html.j2", assignments=list(assignments.values()), token=token,
                             action=PICK_PATH, session=None))


def picked(tool: Any, values: StoredValues, token: str, name: str, assignments: Mapping[str, Any]) -> HTMLResponse:
    """The signed answer to the LMS for the assignment picked with `token` (spent: one answer per pick page)."""
    if name not in assignments:
        raise Refusal(404, f"no assignment called {name[:80]!r} is served here", "Not found")
    pick = values.store.take(_PICK + token, time.time()) if token else None
    data = Sessions(values).get_launch_data(pick["launch"]) if isinstance(pick, dict) else None
    if not isinstance(data, dict) or not isinstance(data.get(SETTINGS), dict):
        raise Refusal(403, "this choice is stale or was made already: add the tool from the LMS again",
                      "Refused")
    settings = data[SETTINGS]
    registration = tool.tool_config().find_registration_by_issuer(data["iss"])
    resource = DeepLinkResource().set_url(f"{tool.settings.tool_url}/a/{name}").set_title(
        assignments[name].bundle.title).set_custom_params({"assignment": name})
    answer = DeepLink(registration, str(data.get(DEPLOYMENT, "")), settings).get_response_jwt([resource])
    return HTMLResponse(page("lti_return.html.j2", action=str(settings.get("deep_link_return_url", "")),
                             jwt=answer, title=assignments[name].bundle.title, session=None))
