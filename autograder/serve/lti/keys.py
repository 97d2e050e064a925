"""The tool's RSA key pair: made once by `qkv lti keys` (the private key owner-only), read by `qkv serve`, whose
public half is the JWKS the platforms fetch to check what the tool signs (grade and roster service tokens)."""

from __future__ import annotations

import os
from pathlib import Path

from autograder.errors import QkvError

PRIVATE = "private.pem"
PUBLIC = "public.pem"
KEY_BITS = 2048


def make_keys(folder: Path) -> Path:
    """A new key pair in `folder`; an existing private key is never overwritten (platforms hold its public half)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    private_path = folder / PRIVATE
    if private_path.exists():
        raise QkvError(str(private_path), "a key pair is already here: platforms trust it; move it away first "
                                          "to make a new one")
    key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(private)
        (folder / PUBLIC).write_bytes(public)
    except OSError as err:
        raise QkvError(str(folder), f"cannot write the key pair: {err.strerror or err}") from None
    return private_path


def read_keys(folder: Path) -> tuple[str, str]:
    """(the private key's PEM, the public key's PEM); one line naming the file when either is missing or bad."""
    texts = []
    for name in (PRIVATE, PUBLIC):
        try:
            texts.append((folder / name).read_text(encoding="ascii"))
        except FileNotFoundError:
            raise QkvError(str(folder / name), "no LTI key here: make the pair with `qkv lti keys`") from None
        except (OSError, UnicodeDecodeError) as err:
            raise QkvError(str(folder / name), f"cannot read the LTI key: {err}") from None
    if "PRIVATE KEY" not in texts[0] or "PUBLIC KEY" not in texts[1]:
        raise QkvError(str(folder), "not a PEM key pair: make one with `qkv lti keys`")
    return texts[0], texts[1]


def jwks(public_pem: str) -> dict:
    """The public key as a JSON Web Key Set, with the `kid` PyLTI1p3 puts in the tokens it signs with the pair."""
    from pylti1p3.registration import Registration

    return {"keys": [Registration.get_jwk(public_pem)]}
