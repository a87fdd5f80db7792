"""LangChain's fake chat model, scripted: it replies with tool calls and texts given in advance.

The SDK's tests use it, and so does the handbook's LangGraph page (`docs/src/agents/langgraph.md`),
whose sample program runs in the suite with `langgraph_page_model()` in place of the model the page
names; the handbook's test puts this folder on `PYTHONPATH` for that.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage


class ScriptedChatModel(GenericFakeChatModel):
    """LangChain's fake chat model, replying with the scripted messages whatever tools it has."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self


def langgraph_page_model() -> ScriptedChatModel:
    """The LangGraph page's model: asked to tidy the reports, it calls `write_file` and
    `execute_sql` in one turn, then says what became of them."""
    calls = [
        {"name": "write_file", "args": {"path": "reports/summary.txt", "content": "2 reports"}},
        {"name": "execute_sql", "args": {"query": "DELETE FROM reports WHERE year < 2020"}},
    ]
    return ScriptedChatModel(
        messages=iter(
            [
                AIMessage(
                    content="",
                    tool_calls=[
                        {**c, "id": f"call_{uuid.uuid4().hex[:24]}", "type": "tool_call"}
                        for c in calls
                    ],
                ),
                AIMessage(content="Tidied the reports."),
            ]
        )
    )
