"""Plays one side of a session with the reference client's own engine and
hooks (aigenora 0.1.4), over NDJSON on a TCP connection to 127.0.0.1:PORT.

palaver's interop tests start it as a process and play the other side.
Usage: peer.py --role host|guest --alias rps-v1 --port N [--options JSON]
               [--control-mode autonomous|hybrid]
The last line on stdout is `RESULT <json>` with the engine's result.
"""

import argparse
import asyncio
import json
import sys
import tempfile
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
    ap.add_argument("--alias", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--options", default="{}")
    ap.add_argument("--control-mode", default="autonomous")
    a = ap.parse_args()
    reader, writer = await asyncio.open_connection("127.0.0.1", a.port)
    channel = TcpChannel(reader, writer)
    run = run_host_async if a.role == "host" else run_guest_async
    with tempfile.TemporaryDirectory() as base:
        result = await run(
            protocol_dir(a.alias), channel, options=json.loads(a.options), state_base=base,
            control_mode=a.control_mode,
        )
    writer.close()
    result = {k: v for k, v in result.items() if k in ("completed", "outcome", "reason")}
    sys.stdout.write("\nRESULT " + json.dumps(result) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    asyncio.run(main())
