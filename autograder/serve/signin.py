"""Signing in with a token under the limits: what the sign-in form and the release's --submit both go through.

A token proven lately passes at once (no slow hash). Any other is counted before its slow check, against the client's
address (an IPv6 client's /64) and the account it names as the check looks it up (AccountBook.reserve_try: one
transaction, so a burst of guesses from one place gets FAILURES_ALLOWED checks in the window, never more); a sign-in
that passes counts no more. While tries still being checked fill a key's limit, a sign-in waits for one to settle
(without a thread: a class behind one campus address signing in at once is queued, not refused), for at most
BUSY_SECONDS. The slow checks themselves run a few at a time (accounts.SCRYPTS_AT_ONCE).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Optional

import anyio
from starlette.concurrency import run_in_threadpool

from autograder.grade.gradebook.accounts import Account, AccountBook, Try, token_account
from autograder.serve.guard import FAILURE_WINDOW, FAILURES_ALLOWED

BUSY_SECONDS = 60.0  # the longest a sign-in waits behind others from the same place
LOOK_AGAIN_SECONDS = 0.5  # tries settled by another web process (PostgreSQL) wake no one here: looked at this often
NO_TOKEN = "sign in first: no token was sent"
TOO_MANY = "too many failed sign-ins: wait 15 minutes and try again"
NOT_VALID = "that token is not valid (mistyped, or revoked): check the mail from your instructor"


@dataclass
class Outcome:
    account: Optional[Account]
    error: str = ""

    @property
    def status(self) -> int:
        """The HTTP status of a refusal: 429 past the limit, else 401."""
        return 429 if self.error == TOO_MANY else 401


@dataclass
class SignIns:
    accounts: AccountBook
    _settled: Optional[anyio.Event] = field(default=None, repr=False)

    async def sign_in(self, client: str, token: str) -> Outcome:
        """The account `token` signs in to from `client` (guard.client_address), or why not."""
        if not token.strip():  # nothing guessed: a misconfigured client is not an attack to count
            return Outcome(None, NO_TOKEN)
        account = token_account(token)
        keys = [f"ip:{client}"] + ([f"account:{account}"] if account is not None else [])
        waited_until = time.monotonic() + BUSY_SECONDS
        while True:
            outcome = await run_in_threadpool(self._try, keys, token)
            if outcome is not None:
                return outcome
            if time.monotonic() > waited_until:
                return Outcome(None, TOO_MANY)
            if self._settled is None:
                self._settled = anyio.Event()
            with anyio.move_on_after(LOOK_AGAIN_SECONDS):
                await self._settled.wait()

    def _try(self, keys: list[str], token: str) -> Optional[Outcome]:
        """In a worker thread: the outcome, or None when tries in progress fill the limit (wait, then again)."""
        now = time.time()
        known = self.accounts.known(token, now)
        if known is not None:  # proven lately: a guesser behind the same address locks no honest student out
            return Outcome(known)
        verdict, ticket = self.accounts.reserve_try(keys, now, FAILURE_WINDOW, FAILURES_ALLOWED)
        if verdict is Try.REFUSED:
            return Outcome(None, TOO_MANY)
        if verdict is Try.BUSY:
            return None
        account = None
        try:
            account = self.accounts.check(token, now)
        finally:
            self.accounts.settle_try(ticket, failed=account is None)
            anyio.from_thread.run_sync(self._wake)
        return Outcome(account) if account is not None else Outcome(None, NOT_VALID)

    def _wake(self) -> None:
        if self._settled is not None:
            self._settled.set()
            self._settled = None


__all__ = ["NO_TOKEN", "NOT_VALID", "Outcome", "SignIns", "TOO_MANY"]
