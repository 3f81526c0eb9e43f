"""Reading a message tree (a declared mapping's ``tree``; docs/traces.md, "Message trees").

A tree's nodes are linked by parent and/or children ids, or nested (children holding the child nodes). Every
assistant node is one LLM call whose context is its ancestors' messages, root first; the transcript is the
path to the current node (``tree.current``) or to the last leaf. An assistant node that is the only child of
an assistant node continues its parent's answer. A node naming a node that is not in the tree, a node with
two parents, or a cycle: ``TreeBroken``, which the caller reports as ``tree_broken``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from drafters.traces.formats._content import as_list, as_text
from drafters.traces.formats._spellings import get
from drafters.traces.model import LLMCall, Message, ToolDef

_NIL_V4 = re.compile(r"0{8}-0{4}-[1-8]000-[89ab]000-0{12}")  # all zero but the version and variant digits


class TreeBroken(Exception):
    """The tree cannot say which messages each call saw: ``why``, at the path ``at``."""

    def __init__(self, why: str, at: str):
        super().__init__(why)
        self.why, self.at = why, at


@dataclass
class Node:
    """One node of a tree: its id, the raw node and the path it sits at."""

    id: str
    raw: Any
    at: str


@dataclass
class Links:
    """Each node's parent id (None: a root) and each id's children, in file order."""

    parent: dict[str, str | None]
    children: dict[str | None, list[str]]


def tree_nodes(nodes: Any, where: str, tree: Mapping[str, str]) -> tuple[list[Node], dict[str, str | None] | None]:
    """The nodes of the collection ``nodes`` found at ``where`` (an object keyed by id, a list of nodes with
    ids, or a nested tree), and for a nested tree each node's parent by where it sits (else None). Raises
    TypeError when ``nodes`` is no collection."""
    id_key = tree.get("id", "id")
    if isinstance(nodes, dict):
        return [Node(str(k), n, f"{where}['{k}']") for k, n in nodes.items()], None
    if not isinstance(nodes, list):
        raise TypeError(type(nodes).__name__)
    if "children" in tree and any(isinstance(c, dict) for n in nodes for c in as_list(get(n, tree["children"]))):
        return _nested(nodes, where, id_key, tree["children"])
    return [Node(as_text(get(n, id_key)), n, f"{where}[{i}]") for i, n in enumerate(nodes)], None


def _nested(nodes: list, where: str, id_key: str, key: str) -> tuple[list[Node], dict[str, str | None]]:
    """A nested tree's nodes, depth first, and each node's parent id (the node holding it)."""
    items: list[Node] = []
    parents: dict[str, str | None] = {}
    stack = [(n, f"{where}[{i}]", None) for i, n in reversed(list(enumerate(nodes)))]
    while stack:
        node, at, up = stack.pop()
        nid = as_text(get(node, id_key)) if isinstance(node, dict) else ""
        items.append(Node(nid, node, at))
        parents[nid] = up
        kids = get(node, key) if isinstance(node, dict) else None
        stack += [(k, f"{at}.{key}[{j}]", nid) for j, k in reversed(list(enumerate(kids)))] \
            if isinstance(kids, list) else []
    return items, parents


def tree_links(items: list[Node], tree: Mapping[str, str], nested: dict[str, str | None] | None,
               where: str) -> Links:
    """Parents and children of ``items`` from the ``parent`` and/or ``children`` keys (or the nesting).
    Raises TreeBroken."""
    parent: dict[str, str | None] = {}
    for node in items:
        if not isinstance(node.raw, dict) or not node.id:
            raise TreeBroken("has a node that is not an object with an id", node.at)
        if nested is not None:
            parent[node.id] = nested[node.id]
            continue
        value = get(node.raw, tree["parent"]) if "parent" in tree else None
        # a nil id ("", "00000000-0000-...", Claude.ai's "00000000-0000-4000-8000-...") names no parent: a root
        text = as_text(value) if value is not None else ""
        parent[node.id] = None if not text.strip("0-") or _NIL_V4.fullmatch(text) else text
    for node in items:
        for child in as_list(get(node.raw, tree["children"])) if "children" in tree and nested is None else []:
            child = as_text(child)
            if child not in parent:
                raise TreeBroken(f"names a child {child!r} that is not one of its nodes", node.at)
            if parent[child] not in (None, node.id):
                raise TreeBroken(f"gives node {child!r} two parents", node.at)
            parent[child] = node.id
    children: dict[str | None, list[str]] = {}
    for nid, p in parent.items():
        if p is not None and p not in parent:
            raise TreeBroken(f"names a parent {p!r} that is not one of its nodes", where)
        children.setdefault(p, []).append(nid)
    return Links(parent, children)


@dataclass
class TreeReading:
    """The read messages of a tree's nodes (by id) and its links; ``calls`` and ``transcript`` walk them."""

    items: list[Node]
    links: Links
    messages: dict[str, Message]  # each node's (first) message
    more: dict[str, list[Message]] = field(default_factory=dict)  # its further ones: an answer's tool result, the
    # answer after it (Claude.ai's server-side web search inside one assistant message)

    def joined(self, nid: str) -> bool:
        """An assistant node continuing its parent's answer (its parent's only child, its last message an answer)."""
        p, msgs = self.links.parent[nid], self.messages
        return p is not None and nid in msgs and p in msgs and msgs[nid].role == "assistant" == \
            (self.more.get(p) or [msgs[p]])[-1].role and len(self.links.children.get(p, [])) == 1

    def path(self, nid: str | None) -> list[Message]:
        """The messages from the root to ``nid``, continued answers and consecutive tool results joined.
        Raises TreeBroken on a cycle."""
        ids: list[str] = []
        seen: set[str] = set()
        while nid is not None:
            if nid in seen:
                raise TreeBroken(f"has a cycle through node {nid}", "")  # the caller names where
            seen.add(nid)
            ids.append(nid)
            nid = self.links.parent[nid]
        out: list[Message] = []
        for i in reversed(ids):
            m = self.messages.get(i)
            if m is None:
                continue
            if out and (self.joined(i) or (m.role == "tool" == out[-1].role)):
                out[-1] = Message(out[-1].role, [*out[-1].parts, *m.parts], model=out[-1].model or m.model)
            else:
                out.append(m)
            out += self.more.get(i, [])
        return out

    def calls(self, prompt: list[Message], tools: list[ToolDef]) -> list[LLMCall]:
        """One call per assistant node that starts an answer: its context the path to its parent."""
        calls: list[LLMCall] = []
        children = self.links.children
        for node in self.items:
            nid = node.id
            if nid not in self.messages or self.messages[nid].role != "assistant" or self.joined(nid):
                continue
            end = nid
            while len(children.get(end, [])) == 1 and self.joined(children[end][0]):
                end = children[end][0]
            context = prompt + self.path(self.links.parent[nid])
            if context:
                first = self.path(end)[-1] if not self.more.get(nid) else self.messages[nid]
                calls.append(LLMCall("", len(calls), tools, context, first))
            done = [self.messages[nid]]
            for m in self.more.get(nid, []):  # an answer after its tool result, inside the node: a call of its own
                if m.role == "assistant" and context:
                    calls.append(LLMCall("", len(calls), tools, [*context, *done], m))
                done.append(m)
        return calls

    def leaf(self, current: str | None, named_at: str = "") -> str | None:
        """The transcript's last node: ``current``, the id found at ``named_at`` (raises TreeBroken when no
        node has it), else the last leaf in file order."""
        if current is not None:
            if current not in self.links.parent:
                raise TreeBroken(f"has no node {current!r}, which {named_at} names as the current one", named_at)
            return current
        leaves = [n.id for n in self.items if not self.links.children.get(n.id)]
        return leaves[-1] if leaves else None
