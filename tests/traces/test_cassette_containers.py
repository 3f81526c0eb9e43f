"""HTTP recordings in containers other than vcrpy's (issue 30; docs/traces.md, provider cassettes): Ruby VCR
YAML (``http_interactions``, ``!binary`` base64 bodies, ``base64_string``, gzip) and Go httprr files.

Fixtures ``fixtures/streams/ruby_vcr_anthropic.yml`` and ``fixtures/streams/*.httprr``: hand-made (a two-call
Anthropic tool-use run), not copies of real recordings.
"""

from __future__ import annotations

from drafters.traces.formats import _cassette
from drafters.traces.ingest import ingest

from .conftest import totals

STREAMS = __import__("pathlib").Path(__file__).resolve().parent / "fixtures" / "streams"


def test_ruby_vcr_binary_and_base64_gzip_bodies():
    result = ingest([STREAMS / "ruby_vcr_anthropic.yml"], scrub=False)
    assert result.report.ok, [e.code for e in result.report.errors]
    assert totals(result.conversations) == (1, 2, 1)
    first, second = result.conversations[0].calls()
    assert first.completion.tool_calls[0].arguments == {"city": "Lyon"}
    assert second.completion.text == "It is 18 °C and cloudy in Lyon."  # base64 of gzip, UTF-8 kept
    assert [m.role for m in second.context] == ["user", "assistant", "tool"]


def test_ruby_vcr_is_a_cassette():
    assert _cassette.is_cassette("---\nhttp_interactions:\n- request:\n")
    assert _cassette.is_cassette("interactions:\n- request:\n")
    assert not _cassette.is_cassette("---\nname: x\n")
