"""A small AIWolf agent on aiwolf-nlp-common's client and packet model:
random but legal answers, one game. usage: aiwolf_agent.py URL NAME [TOKEN]"""
import random
import sys

from aiwolf_nlp_common.client import Client
from aiwolf_nlp_common.packet import Request, Role, Status

url, name = sys.argv[1], sys.argv[2]
token = sys.argv[3] if len(sys.argv) > 3 else None
rng = random.Random(name)
client = Client(url, token)
client.connect()
me, wolves, finished = None, set(), False
LINES = ["I have a feeling about this.", "Who spoke least yesterday?", "Let's be careful.", "Skip", "Over"]
while True:
    try:
        packet = client.receive()
    except Exception:  # noqa: BLE001 - the server closes after FINISH
        break
    req = packet.request
    info = packet.info
    if info is not None:
        me = info.agent
        wolves = {a for a, r in info.role_map.items() if r == Role.WEREWOLF}
    if req == Request.NAME:
        client.send(name)
    elif req in (Request.TALK, Request.WHISPER):
        text = rng.choice(LINES)
        if text == "Skip" and (info.remain_skip or 0) <= 0:
            text = "Over"
        client.send(text)
    elif req in (Request.VOTE, Request.DIVINE, Request.GUARD, Request.ATTACK):
        alive = [a for a, s in info.status_map.items() if s == Status.ALIVE and a != me]
        if req == Request.ATTACK:
            alive = [a for a in alive if a not in wolves] or alive
        client.send(rng.choice(alive) if alive else me)
    elif req == Request.FINISH:
        finished = True
sys.exit(0 if finished else 1)
