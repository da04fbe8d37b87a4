"""Stand-in for the `sglang` package, for tests without GPUs: only `sglang.launch_server`.

Not SGLang. See launch_server.py for what it stands in for.
"""
