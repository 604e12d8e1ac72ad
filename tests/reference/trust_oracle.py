"""The reference's trust_score as an oracle: one JSON request per line
({"snapshot": "<snapshot text>", "target": ..., "depth": ...}), one JSON
answer per line (what aigenora.agent.trust.trust_score returns)."""
import json
import sys

from aigenora.agent.trust import trust_score

for line in sys.stdin:
    req = json.loads(line)
    edges = json.loads(req["snapshot"])["trust_edges"]
    out = trust_score(req["target"], edges, depth=req["depth"])
    sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
    sys.stdout.flush()
