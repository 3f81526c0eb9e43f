"""A text mapping learned from one reply (``drafters/traces/infer_text_example.py``, ``infer-mapping --reply`` on a
text file): the marker line above the example opens the replies, the nearest line of its form naming the other side
opens the prompts; templates' sections, conversation headings and restated prompts are found; marker-shaped lines
that name no sides (bold labels inside a prompt, a reply's ``Thought:``) and examples inside a log's JSON are
refused with a code. Real public files: tests/traces/fixtures/learned/SOURCES.tsv."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from drafters.traces.infer_example import learn_mapping, learned_yaml
from drafters.traces.ingest import ingest
from drafters.traces.mapping_file import mapping_from_dict, parse_mapping
from drafters.traces.report import TraceError

LEARNED = Path(__file__).parent / "fixtures" / "learned"


def _calls(path, learned):
    result = ingest([str(path)], mapping=mapping_from_dict(learned.mapping), scrub=False, dedup=False)
    assert result.report.ok, result.report.errors
    return result.conversations, [call for c in result.conversations for call in c.calls()]


def _sections(text: str, opener: str, closer: str) -> list[str]:
    """The text between each line ``opener`` and the next line ``closer`` (the test's own reading, no product)."""
    return [m.strip() for m in re.findall(rf"^{re.escape(opener)}\n(.*?)^{re.escape(closer)}", text, re.MULTILINE | re.DOTALL)]


def test_a_template_of_sections_with_one_example_per_conversation():
    """DeathMath's details Markdown: five examples, each ``### Task``, ``### Model Response`` and four sections
    of the evaluation (not read); each ``## Example N`` a conversation of one call."""
    path = LEARNED / "deathmath-details-md__gpt-4o-mini__details_20250407_174507.md"
    learned = learn_mapping(path, "Среднее арифметическое можно найти следующим образом:")
    assert learned.mapping["text"] == {
        "markers": {"### Task": "user", "### Model Response": "assistant", "### Correct Answer": "skip",
                    "### Extracted Answer": "skip", "### Score": "skip", "### Tokens Used": "skip"},
        "conversation": "## Example 1"}
    convs, calls = _calls(path, learned)
    text = path.read_text(encoding="utf-8")
    assert len(convs) == 5 and len(calls) == 5
    assert [c.completion.text for c in calls] == _sections(text, "### Model Response", "### Correct Answer")
    assert [[m.text for m in c.context] for c in calls] == [[t] for t in _sections(text, "### Task",
                                                                                  "### Model Response")]


def test_collapsible_sections_of_a_report_with_prompts_quoted_as_code(tmp_path):
    """A Markdown report of single-shot calls: each ``## Question N`` a ``<details><summary>Prompt</summary>`` block
    (the prompt indented as code, bold labels of its own inside) and a ``Response`` block. The summary lines are the
    markers (the prompt's ``**Question:**`` lines, inside the code block, are not), each question a conversation;
    the closing ``</details>`` and the quoting indentation are no part of the texts."""
    section = ("## Question {n}\n\n<details><summary>Prompt</summary>\n\n    I have a planning problem {n}.\n\n"
               "    **Question:**\n    Why is step {n} used?\n\n    **Action:**\n    move a b\n\n"
               "</details>\n\n<details><summary>Response</summary>\n\n\tStep {n} clears the way for the next move."
               "\n\n</details>\n\n")
    path = tmp_path / "outputs.md"
    path.write_text("# Model\n\n" + "".join(section.format(n=n) for n in (1, 2, 3)))
    learned = learn_mapping(path, "Step 2 clears the way")
    assert learned.mapping["text"] == {"markers": {"<details><summary>Prompt</summary>": "user",
                                                   "<details><summary>Response</summary>": "assistant"},
                                       "conversation": "## Question 2"}
    convs, calls = _calls(path, learned)
    assert len(convs) == 3 and len(calls) == 3
    assert [c.completion.text for c in calls] == [f"Step {n} clears the way for the next move." for n in (1, 2, 3)]
    assert calls[0].context[0].text == ("I have a planning problem 1.\n\n**Question:**\nWhy is step 1 used?\n\n"
                                        "**Action:**\nmove a b")


def test_a_reply_rule_below_plain_role_labels_and_a_prompt_with_labels_of_its_own(tmp_path):
    """One request a file, its messages under ``system:`` / ``user:`` lines and the reply under a ``===response===``
    rule (a mobile agent's request dump): the prompt's marker is the user's label of another form, the system's read
    too, and the reply's own ``Step 1:`` lines stay its text. A log whose prompt writes ``Label:`` lines of its
    own above the reply's ``Model response:``: the nearest such line names no side and is passed over for
    ``Task prompt:``."""
    path = tmp_path / "1699962670227evaluate1.txt"
    path.write_text("system:\nYou rate UI elements.\nStep 1: read the task.\nStep 2: score each element.\n\nuser:\n"
                    "{\"Task\": \"Reset the network settings\"}\n\n===response===\nStep 1: The task is a reset.\n"
                    "Step 2: Network scores 9.50 of 10.\n")
    learned = learn_mapping(path, "Network scores 9.50 of 10")
    assert learned.mapping["text"]["markers"] == {"user:": "user", "===response===": "assistant", "system:": "system"}
    _, (call,) = _calls(path, learned)
    assert [m.role for m in call.context] == ["system", "user"]
    assert call.completion.text == "Step 1: The task is a reset.\nStep 2: Network scores 9.50 of 10."
    log = tmp_path / "script_log.txt"
    log.write_text("".join(f"Task prompt:\nArrange the blocks.\nHere is an example of the initial state:\n{{'clear': "
                           f"['b']}}\nReply with code only.\n\nModel response:\ndef successors_{n}(state): ...\n\n"
                           for n in (1, 2)))
    learned = learn_mapping(log, "def successors_1(state)")
    assert learned.mapping["text"]["markers"] == {"Task prompt:": "user", "Model response:": "assistant"}
    _, calls = _calls(log, learned)
    assert [c.completion.text for c in calls] == ["def successors_1(state): ...", "def successors_2(state): ..."]


def test_a_log_of_entries_naming_their_conversation(tmp_path):
    """``llm logs``' Markdown: each entry under a ``# <time> conversation: <id>`` heading, its ``## Prompt``, perhaps
    a ``## System`` written after it, ``## Response`` and ``## Token usage``. Entries naming the same conversation
    continue it (the model saw the earlier ones), the system prompt goes before its prompt, the usage is skip."""
    entry = ("# 2025-03-14T{t}    conversation: {conv} id: 01jpa{t2}\n\nModel: **gpt-4o-mini**\n\n## Prompt\n\n{q}\n\n"
             "{system}## Response\n\n{a}\n\n## Token usage\n\n19 input, 41 output\n\n")
    path = tmp_path / "logs.md"
    path.write_text("".join(entry.format(t=t, t2=t.replace(":", ""), conv=c, q=q, a=a, system=sy) for t, c, q, a, sy in (
        ("09:12:03", "01jpa3k7", "List only directories?", "Use a glob that only matches directories.", ""),
        ("09:13:40", "01jpa3k7", "And hidden ones?", "Use find . -type d instead.", ""),
        ("10:02:11", "01jpa6w1", "A haiku, please.", "Cargo builds at dawn.", "## System\n\nYou are a poet.\n\n"))))
    learned = learn_mapping(path, "Use a glob that only matches directories")
    assert learned.mapping["text"] == {
        "markers": {"## Prompt": "user", "## Response": "assistant", "## Token usage": "skip", "## System": "system"},
        "conversation": "# 2025-03-14T09:12:03", "conversation_id": "conversation:"}
    convs, calls = _calls(path, learned)
    assert len(convs) == 2 and len(calls) == 3
    assert [m.text for m in calls[1].context] == ["List only directories?", "Use a glob that only matches directories.",
                                                  "And hidden ones?"]
    assert [(m.role, m.text) for m in calls[2].context] == [("system", "You are a poet."), ("user", "A haiku, please.")]


def test_a_prompt_section_holding_the_request_as_json_is_not_read_as_one_user_text(tmp_path):
    """A tool's Markdown trace: the request's body (system and user messages) as JSON under ``## LLM request``, the
    reply under ``## Output``. Read as a text mapping, the two messages would be one user text: refused."""
    path = tmp_path / "run.trace.md"
    path.write_text('# Run trace\n\n## LLM request\n\n```json\n{"messages": [{"role": "system", "content": "Be '
                    'brief."}, {"role": "user", "content": "Summarize the PDF."}]}\n```\n\n## Output\n\nThe PDF '
                    'describes garbage collection in list structures.\n')
    with pytest.raises(TraceError) as refused:
        learn_mapping(path, "describes garbage collection")
    assert refused.value.code == "example_not_read" and "as JSON" in refused.value.message


def test_a_header_naming_the_prompt_file_once_opens_no_prompts(tmp_path):
    """A variants run's log: a ``Prompt file:`` header once, then per test ``Test:``, ``Location:`` and the
    model's ``Output:``. The header names the user's side but comes before one reply of three: reading it as the
    prompts' marker would join three independent calls into one (ok, a wrong count), so the example is refused."""
    path = tmp_path / "variants.txt"
    path.write_text("=== ARTIST VARIANT: simple ===\nPrompt file: artist/system_v1.txt\nParameters: max_tokens=300\n\n"
                    + "".join(f"Test: {t}\nLocation: {t.title()}\nOutput:\nHere is an ASCII drawing of the {t}.\n"
                              f"Latency: 5193ms\n\n" for t in ("house", "forest", "cellar")))
    with pytest.raises(TraceError) as refused:
        learn_mapping(path, "Here is an ASCII drawing of the forest")
    assert refused.value.code == "example_not_read"


def test_a_log_of_prompts_sent_whole_is_a_conversation_each():
    """MLAgentBench's step log: a reply refused by the agent's format check, then the retry whose prompt begins
    with the whole first prompt: two conversations of one call, the token counts not read."""
    path = LEARNED / "mlagentbench__gemini-pro_house-price_1__step_7_log.log"
    learned = learn_mapping(path, "The train_gbr.py script has been created to train a Gradient")
    rule = "===================prompt====================="
    assert learned.mapping["text"]["conversation"] == rule
    assert learned.mapping["text"]["markers"]["===================tokens====================="] == "skip"
    assert any("begins with the whole first one" in n for n in learned.notes)
    convs, calls = _calls(path, learned)
    text = path.read_text(encoding="utf-8")
    replies = _sections(text, "===================gemini-pro response (500)=====================",
                        "===================tokens=====================")
    assert len(convs) == 2 and [c.completion.text for c in calls] == replies
    assert calls[1].context[0].text.startswith(calls[0].context[0].text)


def test_one_query_one_response_with_a_heading_not_read():
    path = LEARNED / "crystalyse-conversation-md__creative_20260120_015444__conversation_full.md"
    learned = learn_mapping(path, "exhibits the most negative formation energy and is a prime s")
    assert learned.mapping["text"] == {"markers": {"## User Query": "user", "## Crystalyse Response": "assistant"}}
    result = ingest([str(path)], mapping=mapping_from_dict(learned.mapping), scrub=False, dedup=False)
    assert result.report.ok and [w.code for w in result.report.warnings] == ["preamble_not_read"]
    (call,) = [call for c in result.conversations for call in c.calls()]
    text = path.read_text(encoding="utf-8")
    assert call.completion.text == text.split("## Crystalyse Response\n", 1)[1].strip()
    assert [(m.role, m.text) for m in call.context] == [("user", "> Find stable thermoelectric")]
    # the file's footer after its last rule is read as the reply's text: the comment says so
    assert any("past the rule at line" in n for n in learned.notes)
    assert parse_mapping(learned_yaml(learned)).to_dict()["text"] == learned.mapping["text"]


def test_named_speakers_in_a_dialogue(tmp_path):
    """Speakers nobody spells, each opening turns in alternation: the reply's speaker and the other one."""
    path = tmp_path / "chat.md"
    path.write_text("## Ana\nhow do I list files?\n## Helper Bot 3000\nUse `ls -la` to list them.\n"
                    "### Details\nflags explained\n## Ana\nand hidden ones?\n## Helper Bot 3000\n"
                    "`ls -a` shows hidden files too.\n", encoding="utf-8")
    learned = learn_mapping(path, "shows hidden files too")
    assert learned.mapping["text"]["markers"] == {"## Ana": "user", "## Helper Bot 3000": "assistant"}
    convs, calls = _calls(path, learned)
    assert len(convs) == 1 and [c.completion.text for c in calls] == [
        "Use `ls -la` to list them.\n### Details\nflags explained", "`ls -a` shows hidden files too."]


@pytest.mark.parametrize(("text", "example", "code", "said"), [
    # bold labels inside a prompt, once each: no sides named, no dialogue
    ("**Setup**:\nrules\n**IMPORTANT**:\nbe brief\nThe answer is forty-two, clearly.\n",
     "The answer is forty-two", "example_not_read", "opens the prompts"),
    # a reply's own "Thought:" and "Action:" lines are no speakers
    ("Task: add numbers\nThought: I should add them together now\nAction: add\n",
     "I should add them together now", "example_not_read", "opens the prompts"),
    # the example inside a JSON string of a log
    ("=== prompt ===\nhi\n=== response ===\n{\n  \"llm_output\": \"TOOL_CALL: search(name=\\\"x\\\")\"\n}\n",
     "TOOL_CALL: search(name=", "example_not_read", "inside a JSON string"),
    ("## User\nhi\n## Bot\nhello there friend\n", "not in this file at all", "example_not_found", "no line"),
])
def test_readings_the_example_cannot_vouch_for_are_refused(tmp_path, text, example, code, said):
    path = tmp_path / "log.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TraceError) as err:
        learn_mapping(path, example)
    assert err.value.code == code and said in err.value.message


def test_a_reply_writing_a_tool_call_is_refused(tmp_path):
    """The learned reading is checked by reading: a tool call written in a reply cannot be read as text."""
    path = tmp_path / "log.md"
    path.write_text("## User Query\nlist files\n## Model Response\nI will list them now for you.\n"
                    "TOOL_CALL: ls(path=\".\")\n", encoding="utf-8")
    with pytest.raises(TraceError) as err:
        learn_mapping(path, "I will list them now for you.")
    assert err.value.code == "example_not_read" and "content_not_mapped" in err.value.message


def test_a_header_before_each_prompt_opens_each_conversation(tmp_path):
    """An eval's results: ``Test:`` right before every ``Input:``, ``Latency:`` after each ``Output:``: five
    independent calls, not one chat (the layout of held-out set 60's tt-zork1 files, written here by hand)."""
    path = tmp_path / "variants.txt"
    cases = [("casual", "I want to open the mailbox", "To open the mailbox, type `open mailbox`."),
             ("verbose", "examine the painting", "Examine painting\n\nThis examines it."), ("short", "open it", "open")]
    path.write_text("=== VARIANT: fewshot ===\nParameters: t=0.1\n\n" + "".join(
        f"Test: {name}\nInput: {prompt}\nOutput: {reply}\nLatency: 9ms\n\n" for name, prompt, reply in cases))
    learned = learn_mapping(path, "To open the mailbox, type")
    assert learned.mapping["text"] == {"markers": {"Input:": "user", "Output:": "assistant", "Test:": "skip",
                                                   "Latency:": "skip"}, "conversation": "Test:"}
    convs, calls = _calls(path, learned)
    assert len(convs) == 3 and [([m.text for m in c.context], c.completion.text) for c in calls] == [
        ([prompt], reply) for _, prompt, reply in cases]


def test_a_label_inside_prompts_stays_prompt_text_and_a_role_label_once_is_its_role(tmp_path):
    """An iterative RTL log (the layout of held-out set 58's AutoChip log, written here by hand): ``system:`` once,
    then ``user:`` prompts that each hold a ``Hint:`` line, ``assistant:`` replies. The system prompt is read as
    the system's, and the hints stay in the prompts (a skip section there would cut them out: a new user's trial)."""
    path = tmp_path / "log.txt"
    path.write_text("system: You write Verilog.\nuser: Write an AND gate.\nassistant: module a(); endmodule\n"
                    "user: The testbench failed.\nHint: Output 'y' has 3 mismatches.\nFix it.\n"
                    "assistant: module a(input x, output y); assign y = x; endmodule\n"
                    "user: Still failing.\nHint: Output 'y' has 1 mismatch.\nassistant: module b(); endmodule\n")
    learned = learn_mapping(path, "assign y = x; endmodule")
    assert learned.mapping["text"]["markers"] == {"user:": "user", "assistant:": "assistant", "system:": "system"}
    convs, calls = _calls(path, learned)
    assert len(calls) == 3 and calls[0].context[0].role == "system"
    assert calls[1].context[-1].text == "The testbench failed.\nHint: Output 'y' has 3 mismatches.\nFix it."


def test_a_logging_librarys_entries_learned_behind_their_prefix():
    """PandasAI's ``pandasai.log``: every entry opens with ``<date> <time> [INFO]``; the reply is the ``Code
    generated:`` entry and its prompt the ``Prompt used:`` entry (the prefix's numbers any number), every other entry
    (pipeline steps, ``Question:``, ``Answer:``, HTTP requests) is not read; the prompts, a template filled for each
    question, open alike, so each opens a conversation of one call."""
    path = LEARNED / "pandasai-log__pandas-ai-streamlit__pandasai.log"
    learned = learn_mapping(path, '"value": f"The average price is ${average_price:.2f}."')
    markers = learned.mapping["text"]["markers"]
    assert markers["2024-02-29 23:00:58 [INFO] Code generated:"] == "assistant"
    assert markers["2024-02-29 23:00:58 [INFO] Prompt used:"] == "user"
    assert markers["2024-02-29 22:58:19 [INFO]"] == "skip" and set(markers.values()) == {"user", "assistant", "skip"}
    assert learned.mapping["text"]["conversation"] == "2024-02-29 23:00:58 [INFO] Prompt used:"
    convs, calls = _calls(path, learned)
    text = path.read_text(encoding="utf-8")
    replies = [s.strip() for s in re.findall(r"\[INFO\] Code generated:\n(.*?)^\d{4}-", text, re.MULTILINE | re.DOTALL)]
    assert len(convs) == len(calls) == len(replies) == 5
    assert [" ".join(c.completion.text.split()) for c in calls] == [" ".join(r.split()) for r in replies]
    assert all(c.context[0].text.startswith("dfs[0]:") and "Answer:" not in c.context[0].text for c in calls)


@pytest.mark.parametrize("prefix", ["2024-05-01 12:00:00,123 - agent - INFO - ",
                                    "2024-05-01 12:00:00.123 | INFO     | agent.loop:step:42 - ", "INFO:agent:"])
def test_log_entries_of_other_layouts(tmp_path, prefix):
    def entry(text):
        return prefix.replace("00.123", "07.5").replace(",123", ",457") + text
    log = "\n".join([entry("Starting episode 1"), entry("Prompt: You are playing Minecraft. Your inventory is empty."),
                     "What do you do next?", entry("Response: I will mine wood from the nearest oak tree."),
                     entry("Executing action: mine_wood"),
                     entry("Prompt: You are playing Minecraft. Your inventory has 3 oak logs."), "What do you do next?",
                     entry("Response: I will craft planks."), entry("Episode finished, reward 1.0")]) + "\n"
    path = tmp_path / "agent.log"
    path.write_text(log)
    learned = learn_mapping(path, "I will mine wood from the nearest")
    convs, calls = _calls(path, learned)
    assert [c.completion.text for c in calls] == ["I will mine wood from the nearest oak tree.", "I will craft planks."]
    assert [c.context[0].text for c in calls][1] == "You are playing Minecraft. Your inventory has 3 oak logs.\n" \
        "What do you do next?"
    assert len(convs) == 2 and all(len(c.context) == 1 for c in calls)  # each prompt sent whole (they open alike)


def test_a_second_output_beside_each_reply_is_not_skipped_unseen(tmp_path):
    """An evaluation report (TermGPT's): each command's ``**LLM Result:**`` and a ``**Post-processing Result:**``
    beside it; whether the second is another call of the model is not guessed, so no reading skips it."""
    blocks = [f"### Command {i}\n**Query:** Find files over {i}00 MB\n\n**LLM Result:** find / -size +{i}00M\n"
              f"**Valid:** Yes\n\n**Post-processing Result:** find / -type f -size +{i}00M\n**Valid:** Yes\n\n---\n"
              for i in (1, 2, 3)]
    path = tmp_path / "report.md"
    path.write_text("# Evaluation\n\n" + "\n".join(blocks))
    with pytest.raises(TraceError) as err:
        learn_mapping(path, "find / -size +100M")
    assert "another call of the model is not guessed" in err.value.message


def test_markers_naming_their_role_as_an_attribute(tmp_path):
    """A conversation saved as Markdown blocks opened by ``<!--msg role=X -->`` (an agent's message list): the
    other markers of that form name their role by the attribute (``role=system``, ``role=developer``: system), so a
    system prompt is not read as the previous message's text; tool messages answering calls the text does not record
    as calls are refused (``content_not_mapped``), never read as the assistant's text."""
    blocks = [("system", "You are a capable agent with shell access."), ("developer", "Answer briefly."),
              ("user", "Refactor agent.py so the model can be swapped."),
              ("assistant", "Below is a minimal implementation that satisfies all of your requirements."),
              ("user", "Now write it to model.py please."),
              ("assistant", "Done: model.py now holds the Model base class and OssModel.")]
    path = tmp_path / "convo.md"
    path.write_text("".join(f"<!--msg role={role} -->\n{text}\n\n\n" for role, text in blocks))
    learned = learn_mapping(path, "satisfies all of your requirements")
    assert learned.mapping["text"]["markers"] == {
        "<!--msg role=user -->": "user", "<!--msg role=assistant -->": "assistant",
        "<!--msg role=system -->": "system", "<!--msg role=developer -->": "system"}
    convs, calls = _calls(path, learned)
    assert len(convs) == 1 and len(calls) == 2 and calls[0].context[0].role == "system"
    blocks[4:4] = [("assistant", '{"command": "ls -R ."}'),
                   ("tool name=functions.execute_zsh_commands", "('agent.py\\nutils.py', '')")]
    path.write_text("".join(f"<!--msg role={role} -->\n{text}\n\n\n" for role, text in blocks))
    with pytest.raises(TraceError) as err:
        learn_mapping(path, "satisfies all of your requirements")
    assert err.value.code == "example_not_read" and "content_not_mapped" in err.value.message
