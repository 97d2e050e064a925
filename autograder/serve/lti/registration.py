"""What an LMS admin enters to add the tool: Canvas's developer-key JSON (LTI 1.3 configuration) and Moodle's
external-tool settings, both from the tool's public address, so every URL in them is one the service serves."""

from __future__ import annotations

import json

from autograder.serve.lti.launch import JWKS_PATH, LAUNCH_PATH, LOGIN_PATH

SCOPES = ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
          "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
          "https://purl.imsglobal.org/spec/lti-ags/scope/score",
          "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"]


def canvas_json(tool_url: str, title: str) -> str:
    """The developer key's JSON: launches and deep linking at the tool's routes, grades and roster scopes, the
    launcher's name and email shared (privacy level public: the roster is matched by them)."""
    launch = tool_url + LAUNCH_PATH
    placements = [{"placement": place, "message_type": "LtiDeepLinkingRequest", "target_link_uri": launch}
                  for place in ("link_selection", "assignment_selection")]
    return json.dumps({
        "title": title, "description": "Autograded assignments: hand in and see the score at once",
        "oidc_initiation_url": tool_url + LOGIN_PATH, "target_link_uri": launch,
        "public_jwk_url": tool_url + JWKS_PATH, "scopes": SCOPES,
        "extensions": [{"platform": "canvas.instructure.com", "privacy_level": "public",
                        "settings": {"placements": placements}}],
        "custom_fields": {}}, indent=2)


def moodle_settings(tool_url: str, title: str) -> str:
    """Site administration > Plugins > External tool > Manage tools > configure a tool manually, field by field."""
    rows = [("Tool name", title), ("Tool URL", tool_url + LAUNCH_PATH), ("LTI version", "LTI 1.3"),
            ("Public key type", "Keyset URL"), ("Public keyset", tool_url + JWKS_PATH),
            ("Initiate login URL", tool_url + LOGIN_PATH), ("Redirection URI(s)", tool_url + LAUNCH_PATH),
            ("Supports Deep Linking (Content-Item Message)", "yes"), ("Content Selection URL", tool_url + LAUNCH_PATH),
            ("IMS LTI Assignment and Grade Services", "Use this service for grade sync and column management"),
            ("IMS LTI Names and Role Provisioning", "Use this service to retrieve members' information as per "
                                                    "privacy settings"),
            ("Share launcher's name with tool", "Always"), ("Share launcher's email with tool", "Always")]
    return "\n".join(f"{name}: {value}" for name, value in rows)
