"""Where --submit and hand_in() send a hub user's file from their server, without a hub (issue 49): the service at
QKV_SERVICE_URL with the server's JUPYTERHUB_API_TOKEN, a sign-in link first where there is one, and one line for
what is missing. tests/serve/test_hub.py hands in through a real hub."""

from __future__ import annotations

import pytest

from autograder.selfcheck.qkv_selfcheck.data import UsageError
from autograder.selfcheck.qkv_selfcheck.submit import Link, find_link

TOKEN = "0123456789abcdef0123456789abcdef"


@pytest.fixture
def hub_server(monkeypatch, tmp_path):
    monkeypatch.delenv("QKV_TOKEN", raising=False)
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", TOKEN)
    monkeypatch.setenv("QKV_SERVICE_URL", "https://hub.example.edu/services/qkv/")
    return tmp_path / "qkv_token.txt"


def test_in_a_hub_server_the_hub_token_goes_to_the_service(hub_server):
    assert find_link(hub_server, "attention-numpy") == Link("https://hub.example.edu/services/qkv",
                                                            "hub.example.edu", TOKEN, "attention-numpy")


def test_a_sign_in_link_still_comes_first(hub_server):
    hub_server.write_text("https://qkv.example.edu/signin?token=abc123.0123456789abcdef&next=/a/attention-numpy\n")
    assert find_link(hub_server, "attention-numpy").token == "abc123.0123456789abcdef"


@pytest.mark.parametrize("address, said", [("", "QKV_SERVICE_URL (the course service's address) is not set"),
                                           ("ftp://hub/x", "QKV_SERVICE_URL: not the address of a service"),
                                           ("https://user@hub/x", "QKV_SERVICE_URL: not the address of a service")])
def test_without_the_services_address_nothing_is_sent_and_one_line_says_why(hub_server, monkeypatch, address, said):
    monkeypatch.setenv("QKV_SERVICE_URL", address)
    with pytest.raises(UsageError, match=said.replace("(", r"\(").replace(")", r"\)")):
        find_link(hub_server, "attention-numpy")
