"""Adapters that put the memory inside agent frameworks, each an optional extra (``pip install
'magi-desktop[langchain]'``) and each over the public :class:`~magi_desktop.core.Memory` API only.

Nothing here is imported by the rest of the package: a framework is loaded only by the code that asks for
its adapter (``from magi_desktop.integrations.langchain import MagiRetriever``).
"""
