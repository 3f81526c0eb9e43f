"""Decisions on the development split: the split by conversation, the cascade threshold and the deploy
choice read from the development replay only, and the test report told what was chosen where."""

from __future__ import annotations

from types import SimpleNamespace

from drafters.evaluate.select import CASCADE_AT, choose_on_dev, split_dev_test, with_selection


def _prompts(convs):
    return [SimpleNamespace(call_id=f"{c}/{i}", conversation_id=c) for c in convs for i in range(2)]


def test_split_keeps_conversations_whole_and_ignores_order():
    ps = _prompts(["a", "b", "c", "d", "e"])
    assert split_dev_test(ps).dev == []  # 10 calls: too few to split
    s = split_dev_test(ps, min_calls=2)
    assert len(s.dev) + len(s.test) == 10 and s.dev and s.test
    dev = {p.conversation_id for p in s.dev}
    assert not dev & {p.conversation_id for p in s.test}
    assert len(dev) == 2  # 5 conversations: 3 test, 2 development
    again = split_dev_test(list(reversed(ps)), min_calls=2)
    assert {p.conversation_id for p in again.dev} == dev
    assert split_dev_test(_prompts(["only"]), min_calls=1).dev == []


def test_choose_on_dev_reads_the_development_replay_only():
    seen = []

    def run(proposers, calls):
        seen.append((sorted(proposers), len(calls)))
        speed = {"suffix": 1.3, "candidate": 0.9, CASCADE_AT.format(0.5): 1.2, CASCADE_AT.format(1.5): 1.6,
                 CASCADE_AT.format(3.0): 1.1}
        return {"proposers": {n: {"speedup_vs_plain": speed[n], "tau": 2.0, "timing": {}} for n in proposers}}

    dev = _prompts(["x"])
    choice = choose_on_dev(run, {"suffix": object(), "candidate": object()}, lambda t: ("cascade", t), dev)
    assert seen == [(sorted(["suffix", "candidate", "cascade@0.5", "cascade@1.5", "cascade@3"]), 2)]
    assert choice.threshold == 1.5 and choice.deploy["proposer"] == "cascade" and choice.calls == 2
    assert sorted(choice.entries) == ["candidate", "cascade", "suffix"]  # what the choice read, cascade fitted
    assert choice.entries["cascade"]["speedup_vs_plain"] == 1.6
    empty = choose_on_dev(run, {}, lambda t: None, [])
    assert empty.threshold is None and empty.deploy is None and len(seen) == 1

    report = {"proposers": {"cascade": {"speedup_vs_plain": 1.4, "tau": 2.2, "timing": {"tokens_per_s": 9.0}}},
              "speed": {"deploy": {"proposer": "suffix"}}}
    out = with_selection(report, choice, 1.5, False, 6)
    assert out["selection"]["threshold_from"] == "development" and out["selection"]["test_calls"] == 6
    d = out["speed"]["deploy"]
    assert d["proposer"] == "cascade" and d["chosen_on"] == "development" and d["speedup_vs_plain"] == 1.6
    assert d["on_test"] == {"speedup_vs_plain": 1.4, "tau": 2.2, "tokens_per_s": 9.0}
    alone = with_selection({"proposers": {}, "speed": {"deploy": {"proposer": "suffix"}}}, empty, 1.0, False, 2)
    assert alone["speed"]["deploy"]["chosen_on"].startswith("test:")
    assert alone["selection"]["threshold_from"] == "default"
