"""The native libraries load in any order the memory may reach them in (a crash, not an exception, if not)."""

import subprocess
import sys


def test_the_approximate_index_then_the_onnx_embedder_load_in_one_process():
    # usearch first, then onnxruntime, crashed the process with a segmentation fault (store/ann.py loads usearch
    # through _index_class, which loads onnxruntime first).
    code = ("from magi_desktop.core.store import ann_build; ann_build._new_index(8); import onnxruntime; "
            "print('both loaded')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "both loaded" in done.stdout, done.stderr[-2000:]
