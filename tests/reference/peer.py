"""Plays one side of a session with the reference client's own engine and
hooks (aigenora 0.1.4), over NDJSON on a TCP connection to 127.0.0.1:PORT.

palaver's interop tests start it as a process and play the other side.
Usage: peer.py --role host|guest (--alias rps-v1 | --protocol-dir DIR) --port N
               [--options JSON] [--control-mode autonomous|hybrid]
               [--session-id ID] [--key-seed HEX64] [--peer-public-key HEX64]
--session-id, --key-seed (the Ed25519 identity seed) and --peer-public-key
bind a mental_poker match as a real session would (the OT contexts use the
session id; the receipt is signed with the identity and the peer's receipt
must carry the peer's key); without them the reference uses its defaults.
--protocol-dir runs a protocol directory of our own (spec.json + hooks.py on
the reference's SDK, e.g. tests/data/request-response-v1) instead of a
bundled one.
The last line on stdout is `RESULT <json>` with the engine's result
(completed, outcome, reason) and `events`: the `protocol_message` and
`session_ended` events the engine emitted, in order, as {type, data}.
"""

import argparse
import asyncio
import json
import sys
import tempfile

# Loading a protocol directory's hooks.py must not leave __pycache__ in it.
sys.dont_write_bytecode = True
from pathlib import Path

import aigenora
from aigenora.engine.p2p import AsyncJsonLineChannel, ChannelClosed
from aigenora.proto.engine import run_guest_async, run_host_async


class TcpChannel(AsyncJsonLineChannel):
    def __init__(self, reader, writer):
        self.reader = reader
        self.writer = writer

    async def send(self, msg):
        line = json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        self.writer.write(line)
        await self.writer.drain()

    async def recv(self, timeout=None):
        while True:
            line = await self.reader.readline()
            if not line:
                raise ChannelClosed("closed")
            line = line.strip()
            if line:
                return json.loads(line.decode("utf-8"))

    async def close(self):
        self.writer.close()


class RecordingBus:
    """The engine's event bus (it only calls emit): keeps the events that
    tell what went over the wire and how the session ended."""

    KEPT = (
        "protocol_message", "session_ended", "game_over", "audit_passed", "audit_failed",
        "audit_refused", "play_rejected", "mp_terminal_receipt_verified",
        "mp_test_fault_injected", "realtime_command_rejected", "realtime_integrity_failed",
    )

    def __init__(self):
        self.events = []

    def emit(self, event_type, data=None, summary=None):
        if event_type in self.KEPT:
            self.events.append({"type": event_type, "data": data or {}})


def protocol_dir(alias):
    root = Path(aigenora.__file__).parent / "protocols"
    index = json.loads((root / "index.json").read_text())
    for p in index["protocols"]:
        if p["alias"] == alias:
            return root / p["path"]
    raise SystemExit(f"no bundled protocol {alias}")


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--role", required=True)
    which = ap.add_mutually_exclusive_group(required=True)
    which.add_argument("--alias")
    which.add_argument("--protocol-dir")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--options", default="{}")
    ap.add_argument("--control-mode", default="autonomous")
    ap.add_argument("--session-id")
    ap.add_argument("--key-seed")
    ap.add_argument("--peer-public-key")
    a = ap.parse_args()
    extra = {}
    if a.session_id:
        extra["session_id"] = a.session_id
    if a.key_seed:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from aigenora.engine.keys import KeyPair

        priv = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(a.key_seed))
        pub = priv.public_key().public_bytes(
            encoding=serialization.Encoding.Raw, format=serialization.PublicFormat.Raw
        )
        extra["keypair"] = KeyPair(public_key=pub.hex(), private_key=a.key_seed)
    if a.peer_public_key:
        extra["peer_public_key"] = a.peer_public_key
    reader, writer = await asyncio.open_connection("127.0.0.1", a.port)
    channel = TcpChannel(reader, writer)
    run = run_host_async if a.role == "host" else run_guest_async
    directory = Path(a.protocol_dir) if a.protocol_dir else protocol_dir(a.alias)
    bus = RecordingBus()
    with tempfile.TemporaryDirectory() as base:
        result = await run(
            directory, channel, options=json.loads(a.options), state_base=base,
            control_mode=a.control_mode, event_bus=bus, **extra,
        )
    writer.close()
    result = {
        k: v for k, v in result.items()
        if k in ("completed", "outcome", "reason", "audit_passed", "audit", "tick", "ruleset_hash")
    }
    result["events"] = bus.events
    sys.stdout.write("\nRESULT " + json.dumps(result) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    asyncio.run(main())
