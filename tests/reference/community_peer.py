"""The reference client's side of tests/reference_community.rs.

Drives a palaver community server with aigenora's own REST client, key
files, canonical strings and session-proof code, so that what the server
accepts is what the reference really sends.

    community_peer.py invite SERVER HOST_DIR PROTOCOL_ID  -> prints post_id
    community_peer.py session SERVER HOST_DIR GUEST_DIR POST_ID PROTOCOL_ID
                                                          -> prints session_id
    community_peer.py close SERVER DIR SESSION_ID STATUS  -> prints the HTTP status
"""
import json
import sys

from aigenora.engine.crypto import transport_binding_canonical
from aigenora.engine.keys import load_keys, sign_raw
from aigenora.engine.rest import RestClient
from aigenora.proto.session import SessionProof, new_session_nonce, sign_session, submit_session


def invite(server, host_dir, protocol_id):
    kp = load_keys(host_dir)
    ticket = "endpoint-ticket-for-tests"
    binding = transport_binding_canonical(kp.public_key, "iroh", ticket, protocol_id)
    body = {
        "message": "reference host",
        "tags": ["test"],
        "iroh_ticket": ticket,
        "transport": "iroh",
        "transport_info": {"version": 1, "endpoint_id": kp.public_key, "ticket": ticket},
        "transport_binding_signature": sign_raw(kp.private_key, binding.encode("utf-8")),
        "protocol_id": protocol_id,
        "host_control_mode": "autonomous",
        "type": "supply",
        "options": {"best_of": 3},
    }
    data = RestClient(server, kp).json("POST", "/api/v1/invitations", body, expected={201})
    print(data["post_id"])


def session(server, host_dir, guest_dir, post_id, protocol_id):
    host, guest = load_keys(host_dir), load_keys(guest_dir)
    nonce = new_session_nonce()
    proof = SessionProof(
        post_id=post_id,
        host_public_key=host.public_key,
        guest_public_key=guest.public_key,
        protocol_id=protocol_id,
        session_nonce=nonce,
        host_signature=sign_session(host, post_id, host.public_key, guest.public_key, protocol_id, nonce),
        guest_signature=sign_session(guest, post_id, host.public_key, guest.public_key, protocol_id, nonce),
    )
    # submit_session raises unless the server answers 201 with the same session_id.
    print(submit_session(RestClient(server, guest), proof))


def close(server, data_dir, session_id, status):
    client = RestClient(server, load_keys(data_dir))
    try:
        client.json("POST", f"/api/v1/sessions/{session_id}/status", {"status": status, "winner": "host"}, expected={200})
        print(200)
    except Exception as e:  # the reference raises on an unexpected status
        print(json.dumps(str(e)))


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    {"invite": invite, "session": session, "close": close}[cmd](*args)
