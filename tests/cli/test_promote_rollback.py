"""promote, rollback and alias history end to end, through the API (admin key) and on the database
(--db-url), on SQLite and PostgreSQL: the gate and diff shown, confirmation, and every refusal with its
exit code (incompatible version, checksum mismatch, member key, nothing to roll back, declined)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import FAILED, LINEAGE


def aliases(cli) -> dict[str, int]:
    r = cli("drafters", "show", "smol-agent", "--json")
    assert r.code == 0, r.err
    return {a["alias"]: a["version"] for a in r.json["aliases"]}


def test_promote_through_api_shows_gate_and_diff_then_moves(stack, cli):
    v1 = stack.register(1)
    stack.register(2)
    assert aliases(cli) == {"challenger": 2}

    r = cli("promote", "smol-agent", str(v1), "--reason", "first champion", "--yes", key="admin")
    assert r.code == 0, r.err
    assert "champion of smol-agent: v- -> v1" in r.out
    assert "gate of v1: passed" in r.out and "tau +12.0%" in r.out

    # Without --yes it asks; "n" refuses (exit 4) and nothing moves.
    r = cli("promote", "smol-agent", "v2", "--reason", "better tau", key="admin", input="n\n")
    assert r.code == 4, r.out + r.err
    assert "[declined]" in r.err
    assert "Differences v1 -> v2" in r.out and "config" in r.out and "lr" in r.out
    assert aliases(cli)["champion"] == 1

    r = cli("promote", "smol-agent", "2", "--reason", "better tau", key="admin", input="y\n")
    assert r.code == 0, r.err
    assert "champion of smol-agent: v1 -> v2" in r.out
    assert aliases(cli) == {"champion": 2, "challenger": 2}

    # A version whose gate did not pass does not become champion, even with --yes: refused before asking.
    v3 = stack.register(3, gate=FAILED)
    r = cli("promote", "smol-agent", str(v3), "--alias", "champion", "--reason", "looks fine", "--yes",
            key="admin")
    assert r.code == 4 and "[gate_not_passed]" in r.err and "tau gain 0.4% < min_gain 2%" in r.err
    assert "champion needs a passed gate" in r.err and "gate of v3: not passed" in r.out
    assert aliases(cli)["champion"] == 2

    # --force with the reason: it moves, and the history says it was forced and past what.
    # --json: the gate, the diff against the holder and the move, in one document.
    r = cli("promote", "smol-agent", str(v3), "--reason", "manual override", "--force", "--json", key="admin")
    assert r.code == 0, r.err
    doc = r.json
    assert doc["gate"]["passed"] is False and doc["current"] == 2
    assert doc["diff"]["config"]["lr"] == [pytest.approx(2e-4), pytest.approx(3e-4)]
    assert doc["incompatible"] == [] and doc["moved"] is True and doc["from_version"] == 2
    assert doc["needs_force"] == doc["overridden"] == ["gate not passed for v3: tau gain 0.4% < min_gain 2%"]

    # The audit trail names the admin key, never the key itself.
    r = cli("alias", "history", "smol-agent", "--alias", "champion", "--json")
    assert r.code == 0, r.err
    moves = [(e["from_version"], e["to_version"], e["reason"], e["forced"]) for e in r.json]
    assert moves == [(None, 1, "first champion", False), (1, 2, "better tau", False),
                     (2, 3, "manual override [forced past: gate not passed for v3: tau gain 0.4% < min_gain 2%]",
                      True)]
    assert all(e["actor"].startswith("key:td_") and stack.admin_key not in e["actor"] for e in r.json)
    r = cli("alias", "history", "smol-agent")
    assert r.code == 0 and "manual override" in r.out and "challenger" in r.out


def test_promote_refusals_through_api(stack, cli):
    stack.register(1)
    assert cli("promote", "smol-agent", "1", "--reason", "x", "--yes", key="admin").code == 0
    other = stack.register(2, lineage={**LINEAGE, "tokenizer_sha256": "u" * 64})

    # member key: 403 admin_required -> exit 4, one line with the code, and nothing shown before it (no gate,
    # no diff, no prompt)
    r = cli("promote", "smol-agent", str(other), "--reason", "x", "--yes", key="member")
    assert r.code == 4
    assert r.out == ""
    assert r.err.strip() == "error [admin_required] this action needs an admin API key (at Authorization)"
    r = cli("rollback", "smol-agent", "--yes", key="member")
    assert r.code == 4 and r.out == "" and "[admin_required]" in r.err

    # incompatible tokenizer: shown before asking, refused by the server (409) -> exit 4
    r = cli("promote", "smol-agent", str(other), "--reason", "x", "--yes", key="admin")
    assert r.code == 4
    assert "incompatible: tokenizer_sha256 differs" in r.err and "[incompatible_version]" in r.err
    assert aliases(cli)["champion"] == 1
    # forced with a reason, it moves and says what it overrode
    r = cli("promote", "smol-agent", str(other), "--reason", "new tokenizer rollout", "--force", "--yes",
            key="admin")
    assert r.code == 0, r.err
    assert "forced past: tokenizer_sha256 differs" in r.out

    # checksum mismatch: a stored checkpoint file altered after registration -> exit 4, alias unchanged
    v3 = stack.register(3, lineage={**LINEAGE, "tokenizer_sha256": "u" * 64})
    with stack.Session() as s:
        from service import registry

        ver = registry.get_version(s, registry.get_drafter(s, stack.org, "smol-agent"), v3)
        path = Path(stack.store.root) / stack.store.key(ver.checkpoint_uri) / "model.safetensors"
    path.write_bytes(b"tampered")
    r = cli("promote", "smol-agent", str(v3), "--reason", "x", "--yes", key="admin")
    assert r.code == 4 and "[checksum_mismatch]" in r.err
    assert aliases(cli)["champion"] == other

    # unknown drafter / version -> 404 -> exit 3; malformed version -> exit 2
    assert cli("promote", "nope", "1", "--reason", "x", "--yes", key="admin").code == 3
    assert cli("promote", "smol-agent", "99", "--reason", "x", "--yes", key="admin").code == 3
    assert cli("promote", "smol-agent", "latest-ish", "--reason", "x", "--yes", key="admin").code == 2
    # no key at all: usage error before any request
    r = cli("promote", "smol-agent", "1", "--reason", "x", "--yes", key=None)
    assert r.code == 2 and "TRACEDRAFT_API_KEY" in r.err


def test_rollback_through_api(stack, cli):
    for seed in (1, 2, 3):
        stack.register(seed)
    for v in (1, 2, 3):
        assert cli("promote", "smol-agent", str(v), "--reason", f"to v{v}", "--yes", key="admin").code == 0

    r = cli("rollback", "smol-agent", "--reason", "p99 regression", "--yes", key="admin")
    assert r.code == 0, r.err
    assert "champion of smol-agent: v3 -> v2" in r.out
    r = cli("rollback", "smol-agent", "--yes", "--json", key="admin")
    assert r.code == 0, r.err
    assert (r.json["from_version"], r.json["to_version"]) == (2, 1)
    assert aliases(cli)["champion"] == 1
    # to a named version
    r = cli("rollback", "smol-agent", "--to", "3", "--yes", key="admin")
    assert r.code == 0 and aliases(cli)["champion"] == 3
    # member key refused; unknown alias has nothing to roll back (exit 4)
    assert cli("rollback", "smol-agent", "--yes", key="member").code == 4
    r = cli("rollback", "smol-agent", "--alias", "canary", "--yes", key="admin")
    assert r.code == 4 and "[nothing_to_rollback]" in r.err


def test_break_glass_on_the_database(stack, cli):
    """--db-url: no API, no key; the actor is the local user; the same refusals."""
    db = ["--db-url", stack.settings.database_url, "--org", "acme"]
    v1, v2 = stack.register(1), stack.register(2)
    bad = stack.register(3, lineage={**LINEAGE, "chat_template_sha256": "x" * 64})

    r = cli("promote", "smol-agent", str(v1), "--reason", "api down", "--yes", *db, api=False)
    assert r.code == 0, r.err
    r = cli("promote", "smol-agent", str(v2), "--reason", "api down", "--yes", "--json", *db, api=False)
    assert r.code == 0, r.err
    assert r.json["from_version"] == 1 and r.json["to_version"] == 2 and r.json["diff"]["config"]
    r = cli("promote", "smol-agent", str(bad), "--reason", "x", "--yes", *db, api=False)
    assert r.code == 4 and "[incompatible_version]" in r.err

    r = cli("rollback", "smol-agent", "--yes", "--json", *db, api=False)
    assert r.code == 0, r.err
    assert r.json["to_version"] == 1
    r = cli("rollback", "smol-agent", "--yes", *db, api=False)
    assert r.code == 4 and "[nothing_to_rollback]" in r.err

    r = cli("alias", "history", "smol-agent", "--alias", "champion", "--json", *db, api=False)
    assert r.code == 0, r.err
    assert [(e["action"], e["to_version"]) for e in r.json] == [("promote", 1), ("promote", 2), ("rollback", 1)]
    assert all(e["actor"].startswith("cli:") for e in r.json)

    # --org is required on the database path; an unknown org is not found
    r = cli("promote", "smol-agent", "1", "--reason", "x", "--yes", "--db-url", stack.settings.database_url,
            api=False)
    assert r.code == 2 and "--org" in r.err
    r = cli("alias", "history", "smol-agent", "--db-url", stack.settings.database_url, "--org", "nobody",
            api=False)
    assert r.code == 3


def test_api_and_database_admins_answer_alike(stack):
    """The two RegistryAdmin implementations behind promote/rollback/alias history see one registry the same
    way: the same version view, alias targets, move answers and history (actor and timestamp aside)."""
    from service.cli.registry_admin import ApiRegistryAdmin, DbRegistryAdmin, open_registry_admin

    stack.register(1)
    stack.register(2)
    api_opts = (None, None, stack.url, stack.admin_key)
    db_opts = (stack.settings.database_url, "acme", None, None)
    with open_registry_admin(*api_opts) as api:
        assert isinstance(api, ApiRegistryAdmin)
        first = api.promote("smol-agent", 1, "champion", reason="first", force=False)
        seen_api = (api.version("smol-agent", 2), api.alias_version("smol-agent", "champion"),
                    api.alias_version("smol-agent", "canary"))
    with open_registry_admin(*db_opts) as db:
        assert isinstance(db, DbRegistryAdmin)
        seen_db = (db.version("smol-agent", 2), db.alias_version("smol-agent", "champion"),
                   db.alias_version("smol-agent", "canary"))
        second = db.promote("smol-agent", 2, "champion", reason="second", force=False)
        back = db.rollback("smol-agent", "champion", None, reason="back", force=False)
        history_db = db.alias_history("smol-agent", "champion")
    with open_registry_admin(*api_opts) as api:
        history_api = api.alias_history("smol-agent", "champion")
        again = api.rollback("smol-agent", "champion", 2, reason="forward", force=False)

    assert seen_api[1:] == seen_db[1:] == (1, None)
    api_view, db_view = seen_api[0], seen_db[0]
    assert set(api_view) - set(db_view) == {"aliases"} and set(db_view) <= set(api_view)
    same = set(db_view) - {"created_at"}  # the API gives the timestamp as ISO text, the database a datetime
    assert {k: api_view[k] for k in same} == {k: db_view[k] for k in same}
    assert first == {"drafter": "smol-agent", "alias": "champion", "from_version": None, "to_version": 1,
                     "moved": True, "overridden": [], "dry_run": False}
    assert second == {**first, "from_version": 1, "to_version": 2}
    assert back == {**first, "from_version": 2, "to_version": 1}
    assert again == {**first, "from_version": 1, "to_version": 2}

    def moves(events):
        return [(e["action"], e["from_version"], e["to_version"], e["reason"], e["forced"]) for e in events]

    assert moves(history_db) == moves(history_api) == [("promote", None, 1, "first", False),
                                                       ("promote", 1, 2, "second", False),
                                                       ("rollback", 2, 1, "back", False)]
    assert [e["actor"][:4] for e in history_db] == ["key:", "cli:", "cli:"]
