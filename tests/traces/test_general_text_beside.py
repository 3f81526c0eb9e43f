"""Text a conversation's record keeps beside its messages, which the model read (issue 30; docs/traces.md,
"Text beside the messages"): a system prompt in the chat's settings is read as the first message; a prompt or a
retrieved context under a key no reader reads refuses the record (``content_not_mapped``, naming the key), where it
was read ``ok`` with the text dropped (new-user trials: Chatbot UI, LibreChat, LobeChat, Ragas, Continue). A copy of
a message (a rendered prompt, a repr of the reply) is no loss.

Every record below is hand-made in the layout each tool writes, not a copy of a real file.
"""

from __future__ import annotations

import json

from drafters.traces.ingest import ingest
from drafters.traces.mapping_file import parse_mapping

from .conftest import codes, totals


def _chatbot_ui(n: int) -> dict:
    """Chatbot UI's export (v4): conversations with their own system prompt under ``prompt``."""
    history = [{"id": f"c{i}", "name": f"Chat {i}", "folderId": None, "temperature": 1,
                "model": {"id": "gpt-3.5-turbo", "name": "GPT-3.5", "maxLength": 12000, "tokenLimit": 4000},
                "prompt": f"You are a travel guide for city {i}. Answer in one line.",
                "messages": [{"role": "user", "content": f"What should I see in city {i}?"},
                             {"role": "assistant", "content": f"The old town of city {i}."}]} for i in range(n)]
    return {"version": 4, "history": history, "folders": [], "prompts": []}


def test_a_chats_own_prompt_beside_its_messages_refuses_it(tmp_path):
    """One conversation (read by the message list's path) or several (read by the inferred mapping): the
    ``prompt`` each conversation was sent with is not in its messages, so the file is refused, naming the key;
    a declared mapping reads it as the system prompt."""
    for n in (1, 2):
        path = tmp_path / f"chatbot-ui-{n}.json"
        path.write_text(json.dumps(_chatbot_ui(n)))
        result = ingest([path], scrub=False, dedup=False)
        assert not result.conversations and set(codes(result)) == {"content_not_mapped"}, codes(result)
        assert all(e.field.endswith("prompt") for e in result.report.errors)
    mapping = parse_mapping("name: chatbot-ui\nrecords: lists\nmessages: $.messages\nrole: role\n"
                            "roles: {user: user, assistant: assistant}\ncontent: content\n"
                            "prompt: {system: $.prompt}\n", "chatbot-ui.yaml")
    result = ingest([path], mapping=mapping, scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (2, 2, 0), codes(result)
    assert [c.messages[0].text for c in result.conversations] == [
        "You are a travel guide for city 0. Answer in one line.", "You are a travel guide for city 1. Answer in one line."]


def test_a_prompt_beside_the_messages_that_copies_one_is_no_loss(tmp_path):
    doc = _chatbot_ui(2)
    for conv in doc["history"]:
        conv["prompt"] = conv["messages"][0]["content"]
    path = tmp_path / "copies.json"
    path.write_text(json.dumps(doc))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (2, 2, 0), codes(result)


def test_a_system_prompt_in_the_chats_settings_is_its_first_message(tmp_path):
    """LibreChat's export keeps the custom instructions in ``options.promptPrefix``, as a tree or a flat list
    linked by parent ids; a session keeping ``config.systemRole`` (LobeChat's agent prompt) the same. They were
    read ``ok`` without them."""
    user = {"messageId": "m1", "parentMessageId": "00000000-0000-0000-0000-000000000000", "sender": "User",
            "text": "What's the weather in Paris?", "isCreatedByUser": True}
    reply = {"messageId": "m2", "parentMessageId": "m1", "sender": "GPT-4o", "text": "Cold, about 5 C.",
             "isCreatedByUser": False}
    head = {"conversationId": "a1b2", "endpoint": "openAI", "title": "Paris weather",
            "options": {"model": "gpt-4o", "promptPrefix": "You are terse. Answer in one sentence.", "temperature": 0.7}}
    docs = {"tree.json": {**head, "messagesTree": [{**user, "children": [{**reply, "children": []}]}]},
            "flat.json": {**head, "messages": [user, reply]},
            "session.json": {"id": "s1", "config": {"model": "gpt-4o", "systemRole": "You are terse. Answer in one "
                                                                                    "sentence."},
                             "messages": [{"role": "user", "content": user["text"]},
                                          {"role": "assistant", "content": reply["text"]}]}}
    for name, doc in docs.items():
        (tmp_path / name).write_text(json.dumps(doc))
        result = ingest([tmp_path / name], scrub=False, dedup=False)
        assert result.report.ok and totals(result.conversations) == (1, 1, 0), (name, codes(result))
        call = next(result.conversations[0].calls())
        assert [(m.role, m.text) for m in call.context] == [
            ("system", "You are terse. Answer in one sentence."), ("user", "What's the weather in Paris?")], name


def test_retrieved_contexts_the_prompt_held_refuse_the_record(tmp_path):
    """Ragas' evaluation rows: the question, the contexts retrieved into the prompt, the answer. Read ``ok`` as
    question -> answer, the prompt's contexts were dropped; where the logged question is the whole prompt (the
    contexts in it) nothing is lost."""
    rows = [{"user_input": "When was the Eiffel Tower built?",
             "retrieved_contexts": ["The Eiffel Tower was built between 1887 and 1889 for the World's Fair."],
             "response": "It was built between 1887 and 1889.", "reference": "1887-1889"},
            {"user_input": "How tall is the Eiffel Tower?", "retrieved_contexts": ["It is 330 metres tall."],
             "response": "About 330 metres.", "reference": "330 m"}]
    path = tmp_path / "ragas.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    result = ingest([path], scrub=False, dedup=False)
    assert not result.conversations and codes(result) == ["content_not_mapped"] * 2, codes(result)
    assert {e.field for e in result.report.errors} == {"retrieved_contexts"}
    for r in rows:
        r["user_input"] = f"Context: {' '.join(r['retrieved_contexts'])}\nQuestion: {r['user_input']}"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (2, 2, 0), codes(result)


def test_a_file_shown_with_a_message_refuses_it(tmp_path):
    """Continue's session file: a user message with the files it was sent with (``contextItems``). Read ``ok``
    without the file's text; refused, naming the key. With no context item the session reads."""
    history = [{"message": {"role": "user", "content": "Why does add fail?"},
                "contextItems": [{"name": "utils.py", "description": "utils.py", "id": {"providerTitle": "file"},
                                  "content": "def add(a, b):\n    return a - b  # subtracts instead of adding\n"}]},
               {"message": {"role": "assistant", "content": "add subtracts: change `a - b` to `a + b`."},
                "contextItems": []}]
    path = tmp_path / "session.json"
    path.write_text(json.dumps({"sessionId": "abc", "title": "Fix add", "history": history}))
    result = ingest([path], scrub=False, dedup=False)
    assert not result.conversations and codes(result) == ["content_not_mapped"], codes(result)
    assert result.report.errors[0].field.endswith("contextItems")
    history[0]["contextItems"] = []
    path.write_text(json.dumps({"sessionId": "abc", "title": "Fix add", "history": history}))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 1, 0), codes(result)


def _claude_ai_message(uuid: str, sender: str, text: str, parent: str, **more) -> dict:
    return {"uuid": uuid, "text": text, "content": [{"type": "text", "text": text, "citations": []}], "sender": sender,
            "created_at": "2025-03-04T10:00:00.000000Z", "attachments": [], "files": [],
            "parent_message_uuid": parent, **more}


ROOT = "00000000-0000-4000-8000-000000000000"  # Claude.ai's parent of a conversation's first message


def test_an_attached_files_text_refuses_the_conversation_and_a_retry_is_a_branch(tmp_path):
    """Claude.ai's export: an attachment's ``extracted_content`` is text the model read with the message (was
    dropped, ``ok``); a retried answer shares its parent with the first (``parent_message_uuid``, the root's parent
    the nil-like ``ROOT``): a call of its own, and only the kept answer is in later contexts (were joined into one
    answer, the abandoned one in every later context)."""
    notes = {"file_name": "q3_sync.txt", "file_size": 120, "file_type": "txt",
             "extracted_content": "Launch moved to Oct 14. Budget capped at 40k EUR. Owner: Priya."}
    attached = {"uuid": "c1", "name": "Notes", "chat_messages": [
        _claude_ai_message("a1", "human", "Summarize the attached notes.", ROOT, attachments=[notes]),
        _claude_ai_message("a2", "assistant", "Launch Oct 14, budget 40k EUR.", "a1")]}
    retried = {"uuid": "c2", "name": "Team name", "chat_messages": [
        _claude_ai_message("p1", "human", "Suggest a name for a data team.", ROOT),
        _claude_ai_message("p2", "assistant", "Data Forge.", "p1"),
        _claude_ai_message("p2b", "assistant", "Signal & Noise.", "p1"),
        _claude_ai_message("p3", "human", "Why that?", "p2b"),
        _claude_ai_message("p4", "assistant", "It separates signal from noise.", "p3")]}
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([attached, retried]))
    result = ingest([path], scrub=False, dedup=False)
    assert codes(result) == ["content_not_mapped"] and result.report.errors[0].field.endswith("attachments")
    assert totals(result.conversations) == (1, 3, 0)
    calls = list(result.conversations[0].calls())
    assert [c.completion.text for c in calls] == ["Data Forge.", "Signal & Noise.", "It separates signal from noise."]
    assert [m.text for m in calls[2].context] == ["Suggest a name for a data team.", "Signal & Noise.", "Why that?"]


def test_retrieved_sources_on_a_reply_refuse_it_with_the_general_paths_reason(tmp_path):
    """Open WebUI's export: the documents its RAG template put in the prompt are kept on the reply
    (``sources[].document``), in no message. Read ``ok`` without them before; refused, and the report gives the
    general path's reason (the OpenAI chat reader, tried first, only found the file is not its shape)."""
    messages = {"u1": {"id": "u1", "parentId": None, "childrenIds": ["a1"], "role": "user",
                       "content": "How many leave days do I get?", "timestamp": 1717000000},
                "a1": {"id": "a1", "parentId": "u1", "childrenIds": [], "role": "assistant", "model": "llama3.1:8b",
                       "content": "Full-time employees accrue 25 days a year [1].", "done": True,
                       "sources": [{"source": {"name": "handbook.pdf", "type": "file"},
                                    "document": ["Section 4.2 Leave: full-time employees accrue 25 paid days."],
                                    "metadata": [{"source": "handbook.pdf", "page": 12}]}]}}
    doc = [{"id": "chat-1", "title": "Leave", "chat": {"title": "Leave", "models": ["llama3.1:8b"],
                                                        "history": {"currentId": "a1", "messages": messages},
                                                        "messages": list(messages.values())}}]
    path = tmp_path / "chat-export.json"
    path.write_text(json.dumps(doc))
    result = ingest([path], scrub=False, dedup=False)
    assert not result.conversations and codes(result) == ["content_not_mapped"], codes(result)
    assert result.report.errors[0].field.endswith("sources")


def test_deepeval_contexts_and_calls_beside_the_turns_refuse_and_a_reference_is_no_turn(tmp_path):
    """DeepEval: a conversational turn's ``retrieval_context`` (was dropped, ``ok``), a test case's
    ``tools_called`` beside ``input`` / ``actual_output`` (was dropped); ``expected_output`` and ``expected_tools``,
    what a grader compares with, are not what the model read and refuse nothing."""
    turns = [{"role": "user", "content": "Can I return worn shoes?"},
             {"role": "assistant", "content": "Only unworn items can be returned.",
              "retrieval_context": ["Shoes: unworn items may be returned within 30 days of delivery."]}]
    path = tmp_path / "conversational.json"
    path.write_text(json.dumps({"conversational_test_cases": [{"scenario": "returns", "turns": turns}]}))
    result = ingest([path], scrub=False, dedup=False)
    assert not result.conversations and codes(result) == ["content_not_mapped"], codes(result)
    case = {"input": "Is my order 1182 shipped?", "actual_output": "Yes, it shipped yesterday via UPS.",
            "expected_output": "The order shipped on April 1 with UPS, tracking follows.", "retrieval_context": None,
            "expected_tools": [{"name": "lookup_order", "input_parameters": {"order_id": "1182"}}]}
    called = [{"name": "lookup_order", "input_parameters": {"order_id": "1182"}, "output": {"status": "shipped"}}]
    path = tmp_path / "dataset.json"
    path.write_text(json.dumps([case, {**case, "input": "Is order 7 shipped?", "tools_called": called}]))
    result = ingest([path], scrub=False, dedup=False)
    assert totals(result.conversations) == (1, 1, 0) and codes(result) == ["content_not_mapped"], codes(result)
    assert result.report.errors[0].field == "tools_called"


def _lobechat(parent_ids: bool) -> dict:
    """LobeChat's export: agents (sessions) with their prompt in ``config.systemRole``, and every session's
    messages in one list naming their ``sessionId`` / ``topicId`` (with ``parentId`` links or without)."""
    msgs = []
    for s in (1, 2):
        msgs += [{"id": f"m{s}1", "role": "user", "content": f"Plan day {s} in Paris", "sessionId": f"s{s}",
                  "topicId": None, "createdAt": 1700000000000 + s, **({"parentId": None} if parent_ids else {})},
                 {"id": f"m{s}2", "role": "assistant", "content": f"Day {s}: the Louvre, then the Seine.",
                  "sessionId": f"s{s}", "topicId": None, "parentId": f"m{s}1", "createdAt": 1700000001000 + s}]
    sessions = [{"id": f"s{s}", "type": "agent", "meta": {"title": f"Agent {s}"},
                 "config": {"model": "gpt-4o", "systemRole": f"You are travel agent {s}."}} for s in (1, 2)]
    return {"exportType": "all", "state": {"sessions": sessions, "messages": msgs, "topics": []}, "version": 7}


def test_messages_of_several_sessions_in_one_list_are_a_conversation_each_with_its_sessions_prompt(tmp_path):
    """Read as one conversation before (the second session's call saw the first's messages, ``ok``) and without
    the agent's prompt, kept on the session the messages name."""
    for parent_ids in (False, True):  # the message list's path, or a tree by parentId (the inferred mapping)
        path = tmp_path / f"lobechat-{parent_ids}.json"
        path.write_text(json.dumps(_lobechat(parent_ids)))
        result = ingest([path], scrub=False, dedup=False)
        assert result.report.ok and totals(result.conversations) == (2, 2, 0), (parent_ids, codes(result))
        contexts = [[m.text for m in next(c.calls()).context] for c in result.conversations]
        assert contexts == [["You are travel agent 1.", "Plan day 1 in Paris"],
                            ["You are travel agent 2.", "Plan day 2 in Paris"]], parent_ids


CHAT = [{"role": "user", "content": "When does the store open?"},
        {"role": "assistant", "content": "It opens at nine in the morning."}]


def test_the_openai_chat_reader_refuses_text_beside_its_messages_but_not_copies(tmp_path):
    """A ``{messages, ...}`` record is the OpenAI chat reader's: text beside the messages (a retrieved context, a
    prompt) was dropped there with no warning at all (a new-user trial). A copy in another form is no loss: the
    messages dumped as JSON text (escaped quotes and newlines), a search query that is a call's argument, a
    retrieval setting's words (no retrieved text)."""
    cases = {"retrieved.json": ({"messages": CHAT, "retrieved_contexts": ["The store opens at nine in the morning."]},
                                "retrieved_contexts"),
             "prompt.json": ({"messages": CHAT, "prompt": "Earlier the user said they live near the harbour."},
                             "prompt"),
             "dumped.json": ({"messages": CHAT, "prompt": json.dumps(CHAT)}, None),
             "setting.json": ({"messages": CHAT, "retrieval_strategy": "hybrid BM25 plus dense reranking"}, None)}
    for name, (doc, refused) in cases.items():
        (tmp_path / name).write_text(json.dumps(doc))
        result = ingest([tmp_path / name], scrub=False, dedup=False)
        if refused:
            assert codes(result) == ["content_not_mapped"] and result.report.errors[0].field == refused, name
        else:
            assert result.report.ok and totals(result.conversations) == (1, 1, 0), (name, codes(result))
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "search", "arguments": json.dumps({"query": "population of Lisbon 2023 census"})}}]}
    history = [{"role": "user", "content": "How many people live in Lisbon?"}, call,
               {"role": "tool", "tool_call_id": "c1", "content": "545,923"},
               {"role": "assistant", "content": "About 546,000."}]
    path = tmp_path / "search.json"
    path.write_text(json.dumps({"chat_history": history, "search_query": "population of Lisbon 2023 census"}))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 2, 1), codes(result)


def test_retrieved_documents_kept_deeper_refuse_the_record(tmp_path):
    """LangChain's retrieval chain output (``source_documents[].page_content``), LlamaIndex's response
    (``source_nodes[].node.text``), an Open WebUI message's uploaded file (``files[].file.data.content``): text the
    prompt held, kept one or two objects down (were ``ok``, the text dropped)."""
    docs = {"source_documents": [{"page_content": "Store hours: nine to six on weekdays.", "metadata": {}}],
            "source_nodes": [{"node": {"id_": "n1", "text": "Store hours: nine to six on weekdays."}, "score": 0.8}]}
    for key, value in docs.items():
        path = tmp_path / f"{key}.json"
        path.write_text(json.dumps({"chat_history": CHAT, key: value}))
        result = ingest([path], scrub=False, dedup=False)
        assert codes(result) == ["content_not_mapped"] and result.report.errors[0].field == key, key
    user = {"role": "user", "content": "Summarize the file.", "files": [
        {"type": "file", "file": {"filename": "hours.txt", "data": {"content": "Open nine to six on weekdays."}}}]}
    path = tmp_path / "files.json"
    path.write_text(json.dumps({"chat_history": [user, {"role": "assistant", "content": "Weekdays, nine to six."}]}))
    result = ingest([path], scrub=False, dedup=False)
    assert codes(result) == ["content_not_mapped"] and result.report.errors[0].field.endswith("files"), codes(result)


def test_one_agent_sessions_settings_are_no_message_outside_the_list(tmp_path):
    """LobeChat's export with one agent: its session object (``type: agent``, no content) was taken for a message
    outside the list and the file refused; its prompt is the conversation's system message."""
    doc = _lobechat(parent_ids=False)
    doc["state"]["sessions"] = doc["state"]["sessions"][:1]
    doc["state"]["messages"] = [m for m in doc["state"]["messages"] if m["sessionId"] == "s1"]
    path = tmp_path / "lobechat.json"
    path.write_text(json.dumps(doc))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 1, 0), codes(result)
    assert result.conversations[0].messages[0].text == "You are travel agent 1."


def test_a_model_object_beside_a_calls_input_is_no_tool_call(tmp_path):
    """Magnet AI's trace spans keep the model as ``{name, provider, parameters: {temperature, ...}}`` beside
    ``input`` / ``output``: shaped like a call (a name and parameters), it refused the span (found on set 50)."""
    spans = [{"id": f"s{i}", "type": "chat", "model": {"name": "OPENAI_GPT-4O", "provider": "openai",
                                                      "parameters": {"llm": "gpt-4o", "temperature": 1}},
              "input": [{"role": "user", "content": f"Summarize feedback batch {i}."}],
              "output": f"Batch {i}: customers like the new dashboard."} for i in range(3)]
    path = tmp_path / "traces.json"
    path.write_text(json.dumps(spans))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (3, 3, 0), codes(result)


def test_a_tool_used_within_one_answer_of_a_message_tree_is_two_calls(tmp_path):
    """Claude.ai's web search inside one assistant message (thinking, the search call, its result, the answer),
    read as a tree by ``parent_message_uuid``: only the node's last message was kept, the call and its result
    dropped (``ok``, 1 call, 0 tool calls; a re-run of the new-user trials)."""
    answer = _claude_ai_message("n2", "assistant", "Rust 1.85.0 is the latest.", "n1")
    answer["content"] = [{"type": "thinking", "thinking": "Search for the release."},
                         {"type": "tool_use", "id": "s1", "name": "web_search", "input": {"query": "Rust release"}},
                         {"type": "tool_result", "tool_use_id": "s1", "content": "Announcing Rust 1.85.0"},
                         {"type": "text", "text": "Rust 1.85.0 is the latest."}]
    doc = [{"uuid": "c1", "name": "Rust", "chat_messages": [
        _claude_ai_message("n1", "human", "What is the latest Rust?", ROOT), answer]}]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(doc))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 2, 1), codes(result)
    second = list(result.conversations[0].calls())[1]
    assert [m.role for m in second.context] == ["user", "assistant", "tool"]
    assert second.completion.text == "Rust 1.85.0 is the latest."


def test_calls_in_run_steps_beside_the_thread_messages_refuse_it(tmp_path):
    """The Assistants API's thread messages beside the run's steps: a ``tool_calls`` step holds the call and its
    output, which no message holds; refused (the filter of role-worded settings objects had let it read ``ok``)."""
    messages = [{"id": "m1", "object": "thread.message", "role": "user", "run_id": None,
                 "content": [{"type": "text", "text": {"value": "Where is order 991?", "annotations": []}}]},
                {"id": "m2", "object": "thread.message", "role": "assistant", "run_id": "r1",
                 "content": [{"type": "text", "text": {"value": "It shipped yesterday.", "annotations": []}}]}]
    step = {"id": "st1", "object": "thread.run.step", "type": "tool_calls", "step_details": {
        "type": "tool_calls", "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "get_order_status", "arguments": "{\"order\": 991}", "output": "shipped"}}]}}
    created = {"id": "st2", "object": "thread.run.step", "type": "message_creation", "step_details": {
        "type": "message_creation", "message_creation": {"message_id": "m2"}}}
    path = tmp_path / "thread.json"
    path.write_text(json.dumps({"thread_id": "thread_abc", "messages": {
        "object": "list", "data": messages, "first_id": "m1", "last_id": "m2", "has_more": False},
        "run_steps": {"object": "list", "data": [created, step]}}))
    result = ingest([path], scrub=False, dedup=False)
    assert not result.conversations and codes(result) == ["content_not_mapped"], codes(result)


def test_review_a_word_of_the_messages_does_not_make_text_beside_them_a_copy(tmp_path):
    """A code review found text beside the messages read as a copy because it held a short text of theirs: a
    question holding a call's argument (``Paris``), a retrieved passage quoting the user's query. Neither is a copy;
    both are refused. Tool definitions in the Chat Completions form (``function.parameters``) are no calls, under
    a declared mapping that does not read them too."""
    call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}
    chat = [{"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "18C and sunny"},
            {"role": "assistant", "content": "It is 18C and sunny there."}]
    rag = [{"role": "user", "content": "refund policy"}, {"role": "assistant", "content": "Within 30 days."}]
    for name, doc, key in [("question.json", {"question": "What is the weather in Paris right now?",
                                              "messages": chat}, "question"),
                           ("rag.json", {"messages": rag, "retrieved_contexts": [
                               "Our refund policy: refunds are granted within 30 days of purchase."]},
                            "retrieved_contexts")]:
        (tmp_path / name).write_text(json.dumps(doc))
        result = ingest([tmp_path / name], scrub=False, dedup=False)
        assert codes(result) == ["content_not_mapped"] and result.report.errors[0].field == key, (name, codes(result))
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather now",
                                               "parameters": {"type": "object", "properties": {}}}}]
    path = tmp_path / "tools.jsonl"
    path.write_text(json.dumps({"messages": CHAT, "tools": tools}) + "\n")
    mapping = parse_mapping("name: x\nmessages: $.messages\nrole: role\ncontent: content\n"
                            "roles: {user: user, assistant: assistant}\n", "x.yaml")
    for how in (None, mapping):
        result = ingest([path], mapping=how, scrub=False, dedup=False)
        assert result.report.ok and totals(result.conversations) == (1, 1, 0), codes(result)


def test_review_a_second_list_in_an_unknown_spelling_and_sessions_after_topics(tmp_path):
    """A second message list whose text is under a key no spelling knows (``body``) is a history beside the
    messages, refused as before (the settings filter had let it read ``ok``); a session's prompt is found when the
    export lists its topics first (a topic the messages name holds no prompt)."""
    history = [{"role": "user", "body": "What does the pro plan cost per month?"},
               {"role": "assistant", "body": "It costs twenty dollars per month."}]
    path = tmp_path / "two.json"
    path.write_text(json.dumps({"messages": CHAT, "history": history}))
    result = ingest([path], scrub=False, dedup=False)
    assert not result.report.ok and not result.conversations, codes(result)
    doc = _lobechat(parent_ids=False)
    for m in doc["state"]["messages"]:
        m["topicId"] = f"t{m['sessionId'][1]}"
    state = doc["state"]
    doc["state"] = {"messages": state["messages"], "topics": [{"id": "t1", "title": "Paris", "sessionId": "s1"},
                                                               {"id": "t2", "title": "Paris", "sessionId": "s2"}],
                    "sessions": state["sessions"]}
    path = tmp_path / "lobechat.json"
    path.write_text(json.dumps(doc))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and [c.messages[0].text for c in result.conversations] == [
        "You are travel agent 1.", "You are travel agent 2."], codes(result)
