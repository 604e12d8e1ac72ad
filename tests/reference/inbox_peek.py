"""Fetches inbox message ID as its owner (the reference's signed client) and
tries to open its ciphertext with another identity's key: prints `opened`
or `refused <error>`. What a third party holding the ciphertext could do."""
import base64
import sys

from aigenora.engine.box import decrypt
from aigenora.engine.keys import load_keys
from aigenora.engine.rest import RestClient

url, owner, other, mid = sys.argv[1:]
msg = RestClient(url, load_keys(owner)).json("GET", f"/api/v1/inbox/{mid}", expected={200})
ciphertext = base64.b64decode(msg["ciphertext"])
try:
    decrypt(load_keys(other).private(), ciphertext)
    print("opened")
except Exception as exc:  # noqa: BLE001 - any failure is a refusal
    print("refused", type(exc).__name__)
