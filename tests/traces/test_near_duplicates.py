"""Near-duplicate conversations across the split: found on the assistant side only, exact Jaccard, moved to train."""

from __future__ import annotations

from drafters.traces.model import Conversation, Message, Source, TextPart, ToolCallPart
from drafters.traces.near_duplicates import (
    THRESHOLD,
    assistant_text,
    jaccard,
    near_duplicates,
    shingles,
    split_without_near_duplicates,
)

WEATHER = ("I checked the forecast for you. Tomorrow in Lisbon expect sunshine in the morning, clouds after "
           "noon and a high of twenty one degrees with a light breeze from the north west in the evening.")


def _conv(cid: str, answer: str, user: str = "what is the weather", args: dict | None = None) -> Conversation:
    call = ToolCallPart("c1", "get_weather", args or {"city": "Lisbon", "days": 1}, "")
    return Conversation(cid, Source("test", "f.json"), messages=[
        Message("user", [TextPart(user)]), Message("assistant", [call]),
        Message("assistant", [TextPart(answer)])])


def test_near_duplicates_are_found_on_the_assistant_side_and_moved_to_train():
    train = [_conv("t1", WEATHER), _conv("t2", "Here is a poem about the sea and the wind over the harbour.")]
    held = [
        _conv("h_same", WEATHER.replace("twenty one", "twenty two"), user="completely different words here"),
        _conv("h_other", "The invoice was sent to the customer and the payment is due on Friday.",
              args={"invoice": 7}),
        _conv("h_user_only", "Sorry, I cannot help with that request today.", user=WEATHER),
    ]
    found = near_duplicates(held, train)
    assert [(d.heldout_id, d.train_id) for d in found] == [("h_same", "t1")]
    exact = jaccard(shingles(assistant_text(held[0])), shingles(assistant_text(train[0])))
    assert found[0].similarity == exact >= THRESHOLD
    new_train, new_held, moved = split_without_near_duplicates(train, held)
    assert [c.id for c in new_held] == ["h_other", "h_user_only"] and [c.id for c in new_train][-1] == "h_same"
    assert moved == found


def test_the_threshold_is_a_threshold():
    a, b = _conv("a", WEATHER), _conv("b", WEATHER + " Bring an umbrella for the evening walk home.")
    s = jaccard(shingles(assistant_text(a)), shingles(assistant_text(b)))
    assert 0.5 < s < 1.0
    assert near_duplicates([b], [a], threshold=s - 1e-9) and not near_duplicates([b], [a], threshold=s + 1e-9)
    silent = Conversation("s", Source("test", "f.json"), messages=[Message("user", [TextPart(WEATHER)])])
    assert near_duplicates([silent], [silent]) == []  # no assistant side: nothing to compare
    short = Conversation("k", Source("test", "f.json"), messages=[
        Message("user", [TextPart("hi")]), Message("assistant", [TextPart("ok, done")])])
    assert near_duplicates([short], [short]) == []  # too short to say anything about memory


def test_prefix_filtering_finds_what_brute_force_finds():
    import random

    rnd = random.Random(3)
    words = [f"w{i}" for i in range(40)]
    base = [" ".join(rnd.choice(words) for _ in range(30)) for _ in range(12)]

    def mutate(text, n):
        t = text.split()
        for _ in range(n):
            t[rnd.randrange(len(t))] = rnd.choice(words)
        return " ".join(t)

    train = [_conv(f"t{i}", b) for i, b in enumerate(base)]
    held = [_conv(f"h{i}", mutate(base[i % 12], i % 6)) for i in range(24)]
    for t in (0.5, 0.7, 0.9):
        got = {(d.heldout_id, d.train_id) for d in near_duplicates(held, train, t)}
        want = set()
        for h in held:
            sims = [(jaccard(shingles(assistant_text(h)), shingles(assistant_text(c))), c.id) for c in train]
            s, cid = max(sims)
            if s >= t:
                want.add((h.id, cid))
        assert got == want and got, t
