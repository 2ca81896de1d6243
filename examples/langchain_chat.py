"""A LangChain chat with Magi Desktop's memory, offline: two conversations, the second recalling the first.

Each turn retrieves from the memory (``MagiRetriever``), puts the documents into the prompt as recalled blocks,
reads the conversation so far from the memory (``MagiChatMessageHistory``), asks the model and stores the
question and the reply as turns of the conversation. The model here is LangChain's fake chat model, so
this runs without a network or a key; put a real one in its place (``ChatOpenAI(...)``, ``ChatOllama(...)``)
and nothing else changes.

    .venv/bin/pip install -e ".[langchain]"       # install.sh's [dev] has it already
    .venv/bin/python examples/langchain_chat.py   # a new memory in a temporary folder; --data-dir DIR for yours
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from langchain_core.documents import Document
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

from magi_desktop.core import Memory
from magi_desktop.integrations.langchain import MagiChatMessageHistory, MagiRetriever

PROMPT = ChatPromptTemplate.from_messages([
    ("system", "You are the user's assistant. What the memory recalls is below; answer only from it, cite the "
               "event ids, and when it says not to guess, say you do not know.\n\n{context}"),
    MessagesPlaceholder("history"),
    ("human", "{question}"),
])
ROLES = {"human": "user", "ai": "assistant", "tool": "tool"}


def format_documents(documents: list[Document]) -> str:
    """The documents for the prompt, each kept whole: its text is a recalled block (see the integration)."""
    return "\n".join(f"[{doc.id or 'memory'}] {doc.page_content}" for doc in documents)


def chat_turn(memory: Memory, model: BaseChatModel, session_id: str, question: str) -> AIMessage:
    """One turn of conversation ``session_id``: a person typed ``question``. (As one runnable:
    ``RunnablePassthrough.assign(context=itemgetter("question") | retriever | format_documents) | PROMPT | model``.)"""
    history = MagiChatMessageHistory(memory, session_id, human_typed=True)    # its human messages are typed
    retriever = MagiRetriever(memory=memory, session_id=session_id)           # its own turns are not evidence
    documents = retriever.invoke(question)
    prompt = PROMPT.invoke({"context": format_documents(documents), "history": history.messages,
                            "question": question})
    reply = model.invoke(prompt)
    history.add_messages([HumanMessage(question), reply])

    pack, findings = documents[0].metadata, documents[1:]
    print(f"[{session_id}] asked: {question}")
    print(f"  memory: {pack['status']}, findings {','.join(str(d.id) for d in findings) or '-'}")
    print("  system prompt: " + str(prompt.to_messages()[0].content).replace("\n", "\n    "))
    print(f"  reply: {reply.content}")
    return reply


def main(data_dir: Path) -> None:
    model = GenericFakeChatModel(messages=iter(["Noted: Miso it is.", "Your cat is called Miso."]))
    with Memory.open(data_dir) as memory:
        chat_turn(memory, model, "chat-1", "I adopted a cat called Miso last spring.")
        memory.process_pending()        # the app or `magi mcp` does this in the background: embed, derive facts
        chat_turn(memory, model, "chat-2", "What is my cat called?")
        read_back = MagiChatMessageHistory(memory, "chat-2").messages
        print("chat-2 read back: " + " | ".join(f"{ROLES[m.type]}: {m.content}" for m in read_back))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, help="the memory's folder (default: a new temporary one)")
    args = parser.parse_args()
    if args.data_dir is not None:
        main(args.data_dir)
    else:
        with tempfile.TemporaryDirectory() as folder:
            main(Path(folder) / "data")
