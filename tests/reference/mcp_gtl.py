"""A buyer and a provider drive one GTL 0.2 transaction through palaver's
MCP entry with the official MCP Python SDK (the `mcp` package on PyPI).

    mcp_gtl.py http URL BUYER_TOKEN PROVIDER_TOKEN
    mcp_gtl.py stdio PALAVER SERVER_URL BUYER_DIR PROVIDER_DIR

`http` talks to `palaver serve` at URL/mcp with each principal's bearer
token; `stdio` starts `palaver mcp` twice (one per data dir). Prints one JSON
object: the transaction id, its final state, the event hashes the MCP entry
reported, the chain check, and what each refusal probe answered. Exits 1
with a message on the first thing that is not as it should be.
"""

import asyncio
import contextlib
import hashlib
import json
import sys

import httpx
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

TOOLS = {
    "market_policy", "market_jobs", "market_open_job", "market_offers", "market_offer",
    "market_decline", "market_lock", "market_confirm", "market_fund", "market_deliver",
    "market_transaction", "market_verify", "market_balance", "market_submit",
}


def fail(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)


async def call(s, name, args=None, refused=False):
    r = await s.call_tool(name, args or {})
    if r.isError != refused:
        fail(f"{name}({args}) -> isError={r.isError}: {r.structuredContent or r.content}")
    if r.structuredContent is None:
        fail(f"{name} answered no structured content: {r.content}")
    return r.structuredContent


def solve(prefix, target):
    """The smallest nonce whose SHA-256 of `prefix|nonce` starts with target."""
    n = 0
    while True:
        d = hashlib.sha256(f"{prefix}|{n}".encode()).hexdigest()
        if d.startswith(target):
            return n, d
        n += 1


@contextlib.asynccontextmanager
async def over_http(url, token):
    client = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    async with client:
        async with streamable_http_client(url + "/mcp", http_client=client) as (r, w, _):
            async with ClientSession(r, w) as s:
                await s.initialize()
                yield s


@contextlib.asynccontextmanager
async def over_stdio(palaver, server, data_dir):
    params = StdioServerParameters(
        command=palaver, args=["--data-dir", data_dir, "--server", server, "mcp"]
    )
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            yield s


async def transaction(buyer, provider, solve_here):
    listed = {t.name for t in (await buyer.list_tools()).tools}
    if not TOOLS <= listed:
        fail(f"tools missing: {sorted(TOOLS - listed)}")
    policy = await call(buyer, "market_policy")
    if not policy["policy_hash"] or "policy" not in policy:
        fail(f"market_policy: {policy}")
    start = (await call(buyer, "market_balance"))["balance"]
    opened = await call(buyer, "market_open_job", {"target": "00", "budget": 40})
    tx = opened["transaction_id"]
    jobs = await call(provider, "market_jobs")
    if tx not in [j["transaction_id"] for j in jobs["jobs"]]:
        fail(f"{tx} is not listed to the provider: {jobs}")
    await call(provider, "market_offer", {"transaction_id": tx, "price": 30})
    offers = (await call(buyer, "market_offers", {"transaction_id": tx}))["offers"]
    if len(offers) != 1:
        fail(f"offers: {offers}")
    await call(buyer, "market_lock", {"transaction_id": tx, "offer_hash": offers[0]["offer_hash"]})
    await call(provider, "market_confirm", {"transaction_id": tx})
    funded = await call(buyer, "market_fund", {"transaction_id": tx})
    if solve_here:
        view = await call(provider, "market_transaction", {"transaction_id": tx})
        inp = view["job"]["input"]
        nonce, digest = solve(inp["prefix"], inp["target"])
        await call(provider, "market_deliver", {"transaction_id": tx, "nonce": nonce, "digest": digest})
    else:
        await call(provider, "market_deliver", {"transaction_id": tx})
    for _ in range(600):
        view = await call(buyer, "market_transaction", {"transaction_id": tx})
        if view["terminal"]:
            break
        await asyncio.sleep(0.1)
    chain = await call(buyer, "market_verify", {"transaction_id": tx})
    end = (await call(buyer, "market_balance"))["balance"]
    return {
        "transaction_id": tx,
        "state": view["state"],
        "event_hashes": [e.get("event_hash") for e in view["events"]],
        "event_types": [e.get("kind") for e in view["events"]],
        "chain": chain,
        "funded": funded,
        "buyer_paid": start - end,
    }


async def probes(s):
    out = {}
    r = await call(s, "market_fund", {"transaction_id": "job_nosuchjob00"}, refused=True)
    out["unknown_transaction"] = r
    r = await call(s, "market_fund", {"transaction_id": 12}, refused=True)
    out["wrong_type"] = r
    r = await call(s, "market_open_job", {"target": "0f", "budget": 5, "surprise": 1}, refused=True)
    out["unknown_field"] = r
    r = await call(s, "market_open_job", {"target": "0f", "budget": 5, "deadline_in_s": 10**9}, refused=True)
    out["out_of_range"] = r
    half = {
        "type": "JOB_OPEN", "transaction_id": "half_mcp",
        "job": {"task_type": "sha256_nonce.v1", "input": {"prefix": "p", "target": "00"},
                "output_format": {"type": "object"}},
    }
    out["hard_gate"] = await call(s, "market_submit", {"message": half}, refused=True)
    try:
        await s.call_tool("no_such_tool", {})
        fail("an unknown tool was not refused")
    except Exception as e:  # the SDK raises the JSON-RPC error
        out["unknown_tool"] = str(e)
    return out


async def main(argv):
    if argv[0] == "http":
        url, bt, pt = argv[1:4]
        buyer_cm, provider_cm = over_http(url, bt), over_http(url, pt)
        solve_here = True
    elif argv[0] == "stdio":
        palaver, server, bdir, pdir = argv[1:5]
        buyer_cm, provider_cm = over_stdio(palaver, server, bdir), over_stdio(palaver, server, pdir)
        solve_here = False
    else:
        fail(__doc__)
    async with buyer_cm as buyer, provider_cm as provider:
        result = await transaction(buyer, provider, solve_here)
        result["probes"] = await probes(buyer)
    print(json.dumps(result))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
