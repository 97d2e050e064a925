"""What an LMS admin enters to add the tool: Canvas's developer-key JSON (LTI 1.3 configuration) and Moodle's
external-tool settings, both from the tool's public address, so every URL in them is one the service serves."""

from __future__ import annotations

import json

from autograder.serve.lti.launch import JWKS_PATH, LAUNCH_PATH, LOGIN_PATH
from autograder.serve.lti.members import CANVAS_CUSTOM

SCOPES = ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
          "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
          "https://purl.imsglobal.org/spec/lti-ags/scope/score",
          "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"]


def canvas_json(tool_url: str, title: str) -> str:
    """The developer key's JSON: launches and deep linking at the tool's routes, grades and roster scopes, the
    launcher's name and email shared (privacy level public), and the custom claims a launch is matched to the roster
    by: Canvas's own user id and SIS integration id (its `sub` is an opaque id no roster has) and the course id."""
    launch = tool_url + LAUNCH_PATH
    placements = [{"placement": place, "message_type": "LtiDeepLinkingRequest", "target_link_uri": launch}
                  for place in ("link_selection", "assignment_selection")]
    return json.dumps({
        "title": title, "description": "Autograded assignments: hand in and see the score at once",
        "oidc_initiation_url": tool_url + LOGIN_PATH, "target_link_uri": launch,
        "public_jwk_url": tool_url + JWKS_PATH, "scopes": SCOPES,
        "extensions": [{"platform": "canvas.instructure.com", "privacy_level": "public",
                        "settings": {"placements": placements}}],
        "custom_fields": dict(CANVAS_CUSTOM)}, indent=2)


MOODLE_FIELDS = "Site administration > Plugins > Activity modules > External tool > Manage tools > configure a tool manually"


def moodle_settings(tool_url: str, title: str) -> str:
    """Every field a Moodle admin sets in the external tool's form (MOODLE_FIELDS), by its label there, in the
    form's order; then what Moodle shows once it is saved, for course.yaml."""
    rows = [("Tool settings", ""), ("Tool name", title), ("Tool URL", tool_url + LAUNCH_PATH),
            ("Tool description", "Autograded assignments: hand in and see the score at once"),
            ("LTI version", "LTI 1.3"), ("Public key type", "Keyset URL"), ("Public keyset", tool_url + JWKS_PATH),
            ("Initiate login URL", tool_url + LOGIN_PATH), ("Redirection URI(s)", tool_url + LAUNCH_PATH),
            ("Custom parameters", "(leave empty)"),
            ("Tool configuration usage", "Show in activity chooser and as a preconfigured tool"),
            ("Default launch container", "Embed, without blocks"),
            ("Supports Deep Linking (Content-Item Message)", "yes"), ("Content Selection URL", tool_url + LAUNCH_PATH),
            ("Services", ""),
            ("IMS LTI Assignment and Grade Services", "Use this service for grade sync and column management"),
            ("IMS LTI Names and Role Provisioning", "Use this service to retrieve members' information as per "
                                                    "privacy settings"),
            ("Tool Settings", "Do not use this service"),
            ("Privacy", ""),
            ("Share launcher's name with tool", "Always"), ("Share launcher's email with tool", "Always"),
            ("Accept grades from the tool", "Always"), ("Force SSL", "yes" if tool_url.startswith("https:") else "no"),
            ("After saving", ""),
            ("Tool configuration details (the list icon on the tool's card)",
             "Platform ID -> issuer, Client ID -> client_id, Deployment ID -> deployment_ids, "
             "Public keyset URL -> key_set_url, Access token URL -> auth_token_url, "
             "Authentication request URL -> auth_login_url; lms: moodle")]
    lines = [f"{MOODLE_FIELDS}:"]
    for name, value in rows:
        lines.append(f"[{name}]" if not value else f"  {name}: {value}")
    return "\n".join(lines)
