"""Text transcripts read by the general path (issue 30; ``formats/text_transcript.py``; docs/traces.md, "Text
transcripts"): a chat kept as text, each message opened by a role-marker line of one decoration. Documents are
hand-made in the layouts such tools write, not copies of real files."""

from __future__ import annotations

import json

from drafters.traces.ingest import ingest

from .conftest import codes, totals

DELIMITED = '''+++
model = "some-model"
userDelimiter = "# === USER ==="
+++

How do I read a file in Lua?

# === ASSISTANT ===

Use io.open:

```markdown
# === USER ===
this is an example inside a code block
```

### Summary

Open, read, close.

# === USER ===

And write one?

# === ASSISTANT ===

Open it with "w".

# === USER ===

'''


def _read(tmp_path, text, name="chat.md"):
    path = tmp_path / name
    path.write_text(text)
    return ingest([path], scrub=False)


def test_delimited_markdown_with_front_matter_and_a_leading_prompt(tmp_path):
    result = _read(tmp_path, DELIMITED)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 0)
    first, second = result.conversations[0].calls()
    assert [(m.role, m.text) for m in first.context] == [("user", "How do I read a file in Lua?")]
    assert "this is an example inside a code block" in first.completion.text  # a fenced marker is text
    assert first.completion.text.endswith("### Summary\n\nOpen, read, close.")  # a heading that is no role
    assert [m.role for m in second.context] == ["user", "assistant", "user"]
    assert second.completion.text == 'Open it with "w".'
    assert codes(result, "warnings") == ["leading_text_read_as_user"]  # the empty last prompt: no message


def test_bold_labels_with_a_heading_before_them(tmp_path):
    text = ("# Chat about tea\nExported on Monday\n\n**System:**\nBe brief.\n\n**User:**\nGreen or black?\n\n"
            "**Assistant:**\nGreen.\n\n## Answer\n\nIt is lighter.\n\n**User:**\nWhy?\n\n**Assistant:**\nLess caffeine.\n")
    result = _read(tmp_path, text, "tea.txt")
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 0)
    first, second = result.conversations[0].calls()
    assert [m.role for m in first.context] == ["system", "user"]
    assert first.completion.text == "Green.\n\n## Answer\n\nIt is lighter."
    assert second.completion.text == "Less caffeine."
    assert "preamble_not_read" in codes(result, "warnings")


def test_two_decorations_that_both_label_a_chat_are_not_guessed(tmp_path):
    text = "## User\nq\n## Assistant\na\n**User:**\nq2\n**Assistant:**\na2\n"
    result = _read(tmp_path, text)
    assert not result.conversations and codes(result) == ["ambiguous_shape"]


def test_a_tool_message_in_text_is_refused(tmp_path):
    text = "## User\nlist files\n## Assistant\nI will run ls.\n## Tool\na.txt\n## Assistant\nOne file.\n"
    result = _read(tmp_path, text)
    assert not result.conversations and codes(result) == ["content_not_mapped"]
    assert result.report.errors[0].line == 5


def test_prose_without_markers_of_both_roles_is_not_a_transcript(tmp_path):
    for text in ("Notes\n\n## User\n\nThe user guide says hello.\n", "User:\nonly one side\n",
                 "Assistant\nUser\nundecorated words on their own lines\n"):
        result = _read(tmp_path, text, "notes.md")
        assert not result.conversations and codes(result) == ["unknown_format"], text


def test_an_assistant_named_by_its_product(tmp_path):
    # a browser extension's export: "## User" / "## Claude", the reply's own headings one level down
    text = ("# Project planning\n\n## User\n\nPlan my week.\n\n## Claude\n\nHere is a plan.\n\n### Monday\n\nRest.\n\n"
            "## User\n\nAnd Tuesday?\n\n## Claude\n\nWork.\n")
    result = _read(tmp_path, text)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 0)
    first = next(iter(result.conversations[0].calls()))
    assert first.completion.text == "Here is a plan.\n\n### Monday\n\nRest."


def test_named_speakers_beside_the_user_are_agents_of_the_model(tmp_path):
    # an editor plugin's saved chat ("## Me" / "## CodeCompanion (Anthropic)") and a meeting of named agents:
    # each name speaks right after the user at least once; a heading repeated inside replies never does
    text = ("## Me\n\nWrite a container.\n\n## CodeCompanion (Anthropic)\n\nTwo ways.\n\n## Docker Approach\n\nA.\n\n"
            "## Me\n\nThe second?\n\n## CodeCompanion (Anthropic)\n\nSure.\n\n## Docker Approach\n\nB.\n")
    result = _read(tmp_path, text)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 0)
    assert [c.completion.text for c in result.conversations[0].calls()][1] == "Sure.\n\n## Docker Approach\n\nB."
    meeting = ("## User\n\nAgenda: choose a model.\n\n## Principal Investigator\n\nAlphaFold.\n\n"
               "## Scientific Critic\n\nCheck confidence.\n\n## User\n\nCritic, anything else?\n\n"
               "## Scientific Critic\n\nNo.\n\n## User\n\nInvestigator, summarize.\n\n"
               "## Principal Investigator\n\nAlphaFold-Multimer.\n")
    result = _read(tmp_path, meeting, "meeting.md")
    assert result.report.ok, codes(result)
    calls = list(result.conversations[0].calls())
    assert [c.completion.text for c in calls] == ["AlphaFold.", "Check confidence.", "No.", "AlphaFold-Multimer."]
    assert "named_speakers_as_assistant" in [w.code for w in result.report.warnings]


def test_a_tool_call_written_as_text_in_a_reply_is_refused(tmp_path):
    # an exporter writing the agent's calls inside the reply in a notation not read ("Tool use:
    # **run_terminal_cmd**", a ```tool_call fence with no <tool_call> block): read as text the calls would be
    # lost, the file reported ok (a <tool_call> block is read: test_general_text_tool_sections.py)
    for notation in ("Tool use: **run_terminal_cmd**", "```tool_call\n<tool_name>ls</tool_name>\n```",
                     "<tool_call>\nls -la\n</tool_call>"):
        text = (f"_**User (2025-10-14 22:25Z)**_\n\nList the files.\n\n---\n\n_**Assistant (default)**_\n\n"
                f"Let me look.\n\n{notation}\n\nDone: a.txt\n")
        result = _read(tmp_path, text)
        assert not result.report.ok and result.conversations == []
        assert "content_not_mapped" in codes(result), notation
    # a notation sharing its line with a block that is read: refused at that line, not a crash
    shared = "## User\n\nList.\n\n## Assistant\n\nTool use: **ls** <tool_call>{\"name\": \"ls\"}</tool_call>\n"
    result = _read(tmp_path, shared)
    assert codes(result) == ["content_not_mapped"] and result.report.errors[0].line == 7
    quoted = "## User\n\nShow a tool call.\n\n## Assistant\n\n```json\n<tool_call>{\"name\": \"x\"}</tool_call>\n```\n"
    assert _read(tmp_path, quoted).report.ok  # inside a code block of another kind it is an example: text


def test_a_chat_log_one_utterance_a_line(tmp_path):
    # a voice agent's transcript: "[time] Speaker: text", one utterance a line, a speaker's lines in a row one turn
    text = ("[2024-12-17 12:01:08] User: Hello. How are you doing?\n"
            "[2024-12-17 12:01:09] Assistant: Hello! I'm here.\n"
            "[2024-12-17 12:01:10] Assistant: How can I help?\n"
            "[2024-12-17 12:01:17] User: Stop the max duration.\n"
            "[2024-12-17 12:01:23] Assistant: Split the task.\n")
    result = _read(tmp_path, text, "transcript.txt")
    assert result.report.ok, codes(result)
    calls = list(result.conversations[0].calls())
    assert [c.completion.text for c in calls] == ["Hello! I'm here.\nHow can I help?", "Split the task."]
    assert [m.text for m in calls[1].context if m.role == "user"] == ["Hello. How are you doing?",
                                                                      "Stop the max duration."]
    bold = "**Human:** Name a prime.\n**Assistant:** 7.\n**Human:** Another?\n**Assistant:** 11.\n"
    assert totals(_read(tmp_path, bold, "bold.md").conversations) == (1, 2, 0)


def test_speaker_lines_inside_prose_are_not_a_chat_log(tmp_path):
    prose = ("# Support notes\n\nThe call went badly. We wrote down two lines:\n\nUser: it crashes.\n"
             "Assistant: please restart.\n\nThen the customer left, and the ticket was closed the next day\n"
             "after a long review of the logs by the team.\nNothing else was recorded.\n")
    result = _read(tmp_path, prose, "notes.md")
    assert not result.report.ok and result.conversations == []


def _titled(title: str) -> str:
    """A LangChain ``pretty_print`` title: the label centred in an 80-column rule of ``=``."""
    return f" {title} ".center(80, "=")


def test_langchain_pretty_print_titles_are_markers(tmp_path):
    # the rules around "Human Message" and "Ai Message" differ in length: one decoration all the same
    text = "\n".join([_titled("System Message"), "", "Be brief.", _titled("Human Message"), "", "Capital of France?",
                      _titled("Ai Message"), "", "Paris.", _titled("Human Message"), "", "And of Italy?",
                      _titled("Ai Message"), "", "Rome.", ""])
    result = _read(tmp_path, text, "run.log")
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 0)
    first, second = result.conversations[0].calls()
    assert [(m.role, m.text) for m in first.context] == [("system", "Be brief."), ("user", "Capital of France?")]
    assert second.completion.text == "Rome."


def test_a_pretty_printed_tool_call_is_refused_not_read_as_text(tmp_path):
    text = "\n".join([_titled("Human Message"), "", "Weather in Paris?", _titled("Ai Message"), "Tool Calls:",
                      "  get_weather (call_1)", " Call ID: call_1", "  Args:", "    city: Paris", ""])
    result = _read(tmp_path, text, "run.log")
    assert not result.conversations and codes(result) == ["content_not_mapped"]
    assert result.report.errors[0].line == 5


def test_heading_levels_stay_apart_when_rules_are_collapsed(tmp_path):
    # "##" and "###" are different decorations: a reply's "### User" heading is its text
    text = "## User\nq\n## Assistant\nAnswer.\n### User\nnot a turn\n## User\nq2\n## Assistant\na2\n"
    result = _read(tmp_path, text)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 0)
    assert result.conversations[0].calls().__next__().completion.text == "Answer.\n### User\nnot a turn"


def test_labels_inside_an_indented_code_block_are_text_not_markers(tmp_path):
    """A report quoting each prompt as an indented code block, its own bold labels inside (``**Question:**``,
    ``**Action:**``): no marker of the file's own opens a message, so the file is refused, not read as a chat
    between the prompt's labels (ok with the wrong calls)."""
    section = ("## Question {n}\n\n<details><summary>Prompt</summary>\n\n    I have a planning problem.\n\n"
               "    **Question:**\n    Why is step {n} used?\n\n    **Action:**\n    move a b\n\n"
               "    **Question:**\n    And step {m}?\n\n</details>\n\n<details><summary>Response</summary>\n\n"
               "\tStep {n} clears the way.\n\n</details>\n\n")
    path = tmp_path / "outputs.md"
    path.write_text("# Model\n\n" + "".join(section.format(n=n, m=n + 1) for n in (1, 2, 3)))
    result = ingest([path], scrub=False, dedup=False)
    assert not result.conversations and codes(result) == ["unknown_format"]


LOG_ENTRY = """# 2025-03-14T{time}    conversation: {conv}

Model: **gpt-4o-mini**

## Prompt

{prompt}

## Response

{reply}

## Token usage

19 input, 41 output

"""


def test_entries_under_headings_above_the_markers_are_not_read_as_one_chat(tmp_path):
    """A log of entries (``llm logs``' Markdown: a ``# time conversation: id`` heading over each entry's ``##``
    markers): whether an entry continues an earlier conversation is not guessed, so the file is refused, not read
    as one chat whose second call holds the first entry as its history."""
    path = tmp_path / "logs.md"
    path.write_text(LOG_ENTRY.format(time="09:12:03", conv="01jpa3", prompt="List dirs?", reply="ls -d */")
                    + LOG_ENTRY.format(time="10:02:11", conv="01jpa6", prompt="A haiku?", reply="Cargo builds."))
    result = ingest([path], scrub=False, dedup=False)
    assert not result.conversations and codes(result) == ["ambiguous_conversations"]
    assert result.report.errors[0].line == 1


def test_a_figure_after_every_reply_is_not_the_reply_text_and_yaml_keys_are_no_markers(tmp_path):
    path = tmp_path / "chat.md"
    path.write_text("".join(LOG_ENTRY.format(time="", conv="", prompt=p, reply=r).split("\n", 4)[4]
                            for p, r in (("List dirs?", "ls -d */"), ("And files?", "ls -p"))))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok, codes(result)
    assert [c.completion.text for c in result.conversations[0].calls()] == ["ls -d */", "ls -p"]
    assert codes(result, "warnings") == ["sections_not_read"]
    results = tmp_path / "eval.yaml"  # an eval's results the YAML reader refuses: its keys are no markers either
    histories = ('[{"role":"user","content":"Capital of France?"}]',
                 ('[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello!"},'
                  '{"role":"user","content":"Capital of Spain?"}]'))
    results.write_text("".join(f"- id: r{i}\n  prompt:\n    raw: '{h}'\n  response:\n    output: {a}\n  success: true\n"
                               for i, (h, a) in enumerate(zip(histories, ("Paris.", "Madrid.")))))
    result = ingest([results], scrub=False, dedup=False)
    assert "text_transcript" not in result.report.formats and not result.conversations


def test_a_section_printing_a_json_body_is_not_read_as_text(tmp_path):
    # a shell library's demo log (Ollama Bash Lib's): the request's messages and the response, with its tool call,
    # printed as JSON under "--- User Prompt ---" / "--- Model Response ---": read as text, the call would be lost
    request = [{"role": "user", "content": "What is the current date and time?"}]
    response = {"model": "gpt-oss:20b", "message": {"role": "assistant", "content": "",
                                                    "tool_calls": [{"function": {"name": "datetime", "arguments": {}}}]}}
    log = ("# ollama_tools demo\n\n--- User Prompt ---\n" + json.dumps(request, indent=2) + "\n-------------------\n"
           "--- Model Response ---\n" + json.dumps(response, indent=2) + "\n-------------------\n")
    path = tmp_path / "demo.md"
    path.write_text(log)
    result = ingest([path], scrub=False)
    assert not result.report.ok and result.conversations == []
    assert "content_not_mapped" in [e.code for e in result.report.errors]


def test_bare_labels_after_rules_open_messages(tmp_path):
    """A chat dumped as ``role``, its text, a rule (HeurAgenix's saved chats): a label alone on a line is a marker
    where the file opens with one and every other follows a rule; a label alone elsewhere is text."""
    rule = "-" * 84
    text = (f"user\nPlan the routes.\nAnswer with ***name***.\n{rule}\n\nassistant\n***nearest***\n\nuser\n"
            f"was a word in the reply.\n{rule}\n\nuser\nNow tune it.\n{rule}\n\nassistant\nRaise k to 5.\n{rule}\n")
    path = tmp_path / "suggestion_0.txt"
    path.write_text(text)
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 0)
    first, second = result.conversations[0].calls()
    assert first.completion.text == "***nearest***\n\nuser\nwas a word in the reply."
    assert [m.role for m in second.context] == ["user", "assistant", "user"]
    path.write_text("Notes\n" + text)  # the file does not open with a label: no marker is guessed
    assert ingest([path], scrub=False).conversations == []


def test_message_class_names_alone_on_a_line_open_messages(tmp_path):
    """browser-use's saved conversations: each message under `` SystemMessage `` / `` HumanMessage `` / `` AIMessage
    ``, the step's reply under `` RESPONSE``: class names are markers undecorated (never prose), and the reply's
    JSON (an action plan, no tool call) is its text."""
    reply = '{\n  "current_state": {"next_goal": "Open the page."},\n  "action": [{"go_to_url": {"url": "a.com"}}]\n}'
    text = (" SystemMessage \nYou are a browser agent.\n\n HumanMessage \nYour task is: find the app name.\n\n"
            f" AIMessage \n{reply}\n\n HumanMessage \nCurrent url: a.com\n\n RESPONSE\n{reply}\n")
    result = _read(tmp_path, text)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 0)
    _, second = result.conversations[0].calls()
    assert [m.role for m in second.context] == ["system", "user", "assistant", "user"]
    assert second.completion.text == reply
    assert totals(_read(tmp_path, text.replace(" RESPONSE\n", "RESPONSE\n")).conversations) == (1, 1, 0)


def test_replies_under_one_role_label_naming_different_agents_are_calls_of_their_own(tmp_path):
    # a group chat rendered as text: "ASSISTANT (agent id: Orchestrator):" then "ASSISTANT (agent id: Radiology):"
    # with nothing between them are two agents' turns, two calls; one parenthesis on every reply (a model's name)
    # is one speaker, and its replies in a row stay one call, as before
    turn = "---\n\n"
    text = ("USER:\nSummarise patient 4 for the tumor board.\n\n" + turn
            + "ASSISTANT (agent id: Orchestrator):\nPatientHistory, proceed with patient 4.\n\n" + turn
            + "ASSISTANT (agent id: PatientHistory):\nThe timeline: diagnosed in 2020, treated since.\n\n" + turn
            + "ASSISTANT (agent id: Radiology):\nThe latest CT shows a partial response.\n\n" + turn
            + "USER:\nThanks. Anything else?\n\n" + turn
            + "ASSISTANT (agent id: Orchestrator):\nNo, the summary is complete.\n")
    result = _read(tmp_path, text, "chat_readable.txt")
    assert result.report.ok, codes(result)
    calls = list(result.conversations[0].calls())
    assert totals(result.conversations) == (1, 4, 0)
    assert [len(c.context) for c in calls] == [1, 2, 3, 5]  # each agent sees the turns before its own
    same = ("USER:\nHi.\n\n" + turn + "ASSISTANT (gpt-4o):\nHello,\n\n" + turn + "ASSISTANT (gpt-4o):\nhow can I help?\n")
    result = _read(tmp_path, same, "same.txt")
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 1, 0)
    assert "adjacent_answers_joined" in [w.code for w in result.report.warnings]


def test_a_rule_between_sections_is_the_separator_not_the_message_s_text(tmp_path):
    # "USER:" / "ASSISTANT:" sections each closed by "---": the rule is not the prompt's or the reply's text
    text = ("USER:\nWhere is my order 4411?\n\n---\n\nASSISTANT:\nIt shipped yesterday.\n\n---\n\n"
            "USER:\nThanks!\n---\nASSISTANT:\nYou are welcome.\n")
    result = _read(tmp_path, text, "support.txt")
    assert result.report.ok, codes(result)
    calls = list(result.conversations[0].calls())
    assert [c.completion.text for c in calls] == ["It shipped yesterday.", "You are welcome."]
    assert [m.text for m in calls[1].context] == ["Where is my order 4411?", "It shipped yesterday.", "Thanks!"]


RULES = "\n".join(f"- Rule {i}: a card of colour {c} is played only on the stack of its colour, rank by rank, from 1 up."
                  for i, c in enumerate(["red", "green", "blue", "white", "yellow", "red", "green"]))


def test_a_log_of_prompts_rebuilt_for_every_call_reads_each_call_apart(tmp_path):
    """``PROMPT:`` / ``LLM RESPONSE:`` blocks, each prompt the game's rules and state rebuilt for the turn: each call
    is a conversation of its own (``rebuilt_prompts_read_apart``); a heading inside the prompt (``RULES:``) is the
    prompt's text, never a speaker; the next entry's title after the rule closing a reply is not its text."""
    turns = [((f"You are Player {p} in a cooperative card game.\n\nRULES:\n\n{RULES}\n\nSTATE: turn {t}, 8 hints "
               "left.\n\nAnswer with a JSON move."), f'{{"action": "HINT_COLOR", "teammate": {1 - p}}}')
             for t, p in enumerate([0, 1, 0])]
    text = "".join(f"\n=== PLAYER {t % 2} TURN ===\nPROMPT:\n{prompt}\n\nLLM RESPONSE:\n{reply}\n{'=' * 50}\n"
                   for t, (prompt, reply) in enumerate(turns))
    result = _read(tmp_path, text, "llm_log.txt")
    assert result.report.ok and totals(result.conversations) == (3, 3, 0)
    assert "rebuilt_prompts_read_apart" in codes(result, "warnings")
    first = next(iter(result.conversations[0].calls()))
    assert first.context[0].text.startswith("You are Player 0") and "RULES:" in first.context[0].text
    assert first.completion.text == '{"action": "HINT_COLOR", "teammate": 1}'  # no "=== PLAYER 1 TURN ===" after it
    chat = ("PROMPT:\nYou are a careful assistant. Summarise the following rules for a new player.\n\n"
            f"{RULES}\n\nLLM RESPONSE:\nPlay colours in order.\n\nPROMPT:\nAnd the hints?\n\nLLM RESPONSE:\n"
            "Eight tokens, one per hint.\n")
    result = _read(tmp_path, chat, "chat.txt")  # a chat's next turn says only what is new: one conversation
    assert result.report.ok and totals(result.conversations) == (1, 2, 0)
