"""AsyncMemory: every public Memory method as a coroutine that runs the same call in a worker thread, on a real
memory (SQLite files, the hashing embedder)."""

import asyncio
import inspect
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from payloads import chat

from magi_desktop.core import AsyncMemory, InvalidInput, Memory, PayloadError

ROOT = Path(__file__).resolve().parent.parent
T0 = 1_765_000_000.0
NOT_OFFLOADED = {"close": "its own coroutine", "add_listener": "registers a callback: AsyncMemory.memory has it"}


def public_methods(cls) -> dict:
    return {name: value for name, value in vars(cls).items() if not name.startswith("_") and inspect.isfunction(value)}


def test_every_public_memory_method_is_a_coroutine_with_its_signature_and_docstring(memory):
    wrapped = AsyncMemory(memory)
    offered = set(public_methods(Memory)) - set(NOT_OFFLOADED)
    for name in offered:
        method = getattr(wrapped, name)
        assert inspect.iscoroutinefunction(method), name
        assert inspect.signature(method) == inspect.signature(getattr(memory, name)), name
        assert method.__doc__ == getattr(Memory, name).__doc__ == getattr(AsyncMemory, name).__doc__, name
    assert not [name for name in vars(AsyncMemory) if not name.startswith("_") and name not in offered
                and name not in {"open", "close", "path"}]
    assert inspect.signature(AsyncMemory.open) == inspect.signature(Memory.open)


def test_async_with_opens_answers_as_the_memory_does_and_closes(tmp_path):
    async def main():
        async with AsyncMemory.open(tmp_path / "m", embedder="hashing") as memory:
            stored = await memory.ingest(chat("I adopted a cat called Miso.", at=T0, item="miso"))
            await memory.process_pending()
            pack = await memory.query("What is my cat called?", now=T0 + 60)
            assert memory.path == memory.memory.path
            return memory, stored, pack

    memory, stored, pack = asyncio.run(main())
    assert "miso" in {f.source_item_id for f in pack.findings} and not stored.duplicate
    with pytest.raises(RuntimeError, match="closed"):
        memory.memory.get_event(stored.event_id)
    with Memory.open(tmp_path / "m", embedder="hashing") as again:             # the same memory, the same answer
        assert again.query("What is my cat called?", now=T0 + 60).to_dict()["findings"] == pack.to_dict()["findings"]


def test_await_open_then_close(tmp_path):
    async def main():
        memory = await AsyncMemory.open(tmp_path / "m", embedder="hashing")
        assert (await memory.stats()).event_count == 0
        await memory.close()
        return memory

    memory = asyncio.run(main())
    with pytest.raises(RuntimeError, match="closed"):
        memory.memory.stats()


def test_errors_come_back_to_the_awaiting_task(tmp_path):
    async def main():
        with pytest.raises(InvalidInput, match="not available"):
            await AsyncMemory.open(tmp_path / "bad", embedder="hashing", llm="gpt-9")
        with pytest.raises(InvalidInput, match="not available"):
            async with AsyncMemory.open(tmp_path / "bad", embedder="hashing", llm="gpt-9"):
                pass
        async with AsyncMemory.open(tmp_path / "m", embedder="hashing") as memory:
            with pytest.raises(InvalidInput, match="empty"):
                await memory.query(" ")
            with pytest.raises(PayloadError) as raised:
                await memory.query("anything?", now="yesterday")
            assert raised.value.field == "now"

    asyncio.run(main())


def test_a_call_runs_off_the_loop_while_other_tasks_go_on(memory):
    """The batch is read in the worker thread: it waits for a task of the loop, which could never run if the call
    blocked the loop."""
    released = threading.Event()
    threads = []

    def payloads():
        threads.append(threading.get_ident())
        assert released.wait(10), "the loop was blocked while the memory call ran"
        yield chat("I live in Porto.", at=T0, item="porto")

    async def main():
        async def release_soon():
            await asyncio.sleep(0.05)
            released.set()

        results, _ = await asyncio.gather(AsyncMemory(memory).ingest_many(payloads()), release_soon())
        return results, threading.get_ident()

    results, loop_thread = asyncio.run(main())
    assert [r.target for r in results] == ["l1_and_l2"] and threads and threads[0] != loop_thread


def test_overlapping_writes_and_reads_all_land(memory):
    committed_on = set()
    memory.add_listener(lambda: committed_on.add(threading.get_ident()))

    async def main():
        wrapped = AsyncMemory(memory)
        writes = [wrapped.ingest(chat(f"Note number {i} about the garden.", at=T0 + i, item=f"n{i}"))
                  for i in range(20)]
        reads = [wrapped.query("garden notes?", now=T0 + 100) for _ in range(5)]
        done = await asyncio.gather(*writes, *reads, wrapped.process_pending())
        return done, threading.get_ident()

    done, loop_thread = asyncio.run(main())
    stored = done[:20]
    assert len({r.event_id for r in stored}) == 20 and not any(r.duplicate for r in stored)
    assert memory.stats().event_count == 20
    assert committed_on and loop_thread not in committed_on       # listeners run on the worker threads


def test_the_readme_asyncio_example_runs_as_written(tmp_path):
    section = (ROOT / "README.md").read_text("utf-8").split("**From asyncio**", 1)[1]
    example = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    env = {**os.environ, "MAGI_DATA_DIR": str(tmp_path / "data")}
    out = subprocess.run([sys.executable, "-c", example], capture_output=True, text=True, env=env, timeout=120,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "ok ['My cat is called Miso.'] True\n"
