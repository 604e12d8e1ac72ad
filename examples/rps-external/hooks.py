#!/usr/bin/env python3
"""Rock-paper-scissors as a palaver hooks program.

palaver runs this file next to spec.json and talks to it in JSON lines on
stdin/stdout (docs/hooks.md). The contract is rps-v1's, so this program can
play palaver's native hooks or the reference client. Only the standard
library is used.
"""

import json
import random
import sys

CHOICES = ["rock", "paper", "scissors"]
BEATS = {"rock": "scissors", "paper": "rock", "scissors": "paper"}


def send(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


class Rps:
    def __init__(self):
        self.role = "host"
        self.mode = "autonomous"
        self.best_of = 3
        self.to_win = 2
        self.wins = {"host": 0, "guest": 0}
        self.call_id = None

    # -- asking palaver for a local decision (hybrid and human modes)
    def decide(self, window):
        send({"id": self.call_id, "decide": window})
        reply = json.loads(sys.stdin.readline())
        return reply.get("decision") or {}

    def describe(self, args):
        return {
            "supported_control_modes": ["autonomous", "hybrid", "human"],
            "decision_schema": {"match_key": "round", "value_field": "choice", "choices": CHOICES},
            "metadata": {"display_name": "Rock-Paper-Scissors (Python hooks)", "tags": "game,rps",
                         "invite_type": "supply", "default_options": {"best_of": self.best_of}},
        }

    def init(self, args):
        self.role = args["role"]
        self.mode = args["control_mode"]
        options = args.get("options") or {}
        self.best_of = int(options.get("best_of") or 3)
        self.to_win = self.best_of // 2 + 1
        return None

    def host_handle_join(self, args):
        self.best_of = int(args["msg"].get("best_of", self.best_of))
        self.to_win = self.best_of // 2 + 1
        return {"response": {"action": "ready", "best_of": self.best_of, "rounds_to_win": self.to_win,
                             "termination": "first_to_win", "round_delay_seconds": 0}}

    def guest_join_message(self, args):
        return {"action": "join", "best_of": self.best_of}

    def guest_handle_ready(self, args):
        self.best_of = args["msg"]["best_of"]
        self.to_win = args["msg"]["rounds_to_win"]
        return None

    def round_value(self, args):
        auto = random.choice(CHOICES)
        if self.mode == "autonomous":
            return auto
        decision = self.decide({"match_key": "round", "match_value": args["round"],
                                "auto": {"choice": auto}, "value_field": "choice"})
        choice = decision.get("choice")
        if choice in CHOICES:
            return choice
        if self.mode == "human":
            raise ValueError("choice must be rock, paper, or scissors")
        return auto

    def round_judge(self, args):
        host, guest = args["host_value"], args["guest_value"]
        if host == guest:
            winner = "draw"
        elif BEATS[host] == guest:
            winner = "host"
        else:
            winner = "guest"
        if winner != "draw":
            self.wins[winner] += 1
        over = max(self.wins.values()) >= self.to_win
        game_winner = max(self.wins, key=self.wins.get) if over else "none"
        send({"snapshot": {"score": dict(self.wins), "round": args["round"] + 2}})
        return {"response": {"action": "round_result", "round": args["round"], "host_choice": host,
                             "guest_choice": guest, "round_winner": winner,
                             "host_wins": self.wins["host"], "guest_wins": self.wins["guest"],
                             "game_over": over, "game_winner": game_winner},
                "completed": over}

    def guest_handle(self, args):
        msg = args["msg"]
        if msg.get("action") == "round_result":
            self.wins = {"host": msg["host_wins"], "guest": msg["guest_wins"]}
            send({"snapshot": {"score": dict(self.wins)}})
        return None


def main():
    game = Rps()
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        game.call_id = request["id"]
        hook = getattr(game, request["hook"], None)
        if hook is None:
            send({"id": request["id"], "ok": False, "error": f"unknown hook {request['hook']}"})
            continue
        try:
            send({"id": request["id"], "ok": True, "result": hook(request.get("args") or {})})
        except Exception as e:  # the error travels back to palaver, which ends the session
            send({"id": request["id"], "ok": False, "error": str(e)})


if __name__ == "__main__":
    main()
