"""STAND-IN for `python -m sglang.launch_server` (SGLang 0.5.11), for tests without GPUs.

It is not SGLang and loads no model. It takes SGLang's launch flags (unknown ones are
ignored, as a real launcher would refuse only misspelled ones), prints the log lines
SGLang 0.5.11 prints while it starts (wording from the wheel: model_runner.py,
memory_pool.py, model_runner_kv_cache_mixin.py, scheduler.py, http_server.py), and then
serves SGLang's HTTP API (entrypoints/http_server.py): /health, /health_generate (503
while starting), /server_info and /get_server_info, POST /generate, /v1/models.

Its memory figures follow SGLang's accounting (sglang-facts.md): the KV pool gets
`mem_fraction_static * free - weights`; with no room left it fails with SGLang's own
"Not enough memory" error.

Knobs (environment):
  STANDIN_FAIL            not-enough-memory | child-traceback | hang | early-exit | ignore-flags
  STANDIN_STEP_S          seconds between start-up steps (default 0.1)
  STANDIN_FREE_GIB        free GPU memory per GPU before weights load (default 47.0)
  STANDIN_WEIGHTS_GIB     weights per GPU (default: the model's safetensors size / tp, else 2.0)
  STANDIN_VERSION         the version /server_info reports (default 0.5.11)
  STANDIN_OLD_API         1: serve /get_server_info only (as versions before /server_info)
Python 3 standard library only: it runs on a bare Debian python3.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GIB = 1 << 30
STEP_S = float(os.environ.get("STANDIN_STEP_S", "0.1"))
FAIL = os.environ.get("STANDIN_FAIL", "")


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="launch_server.py")
    p.add_argument("--model-path", "--model", dest="model_path", required=True)
    p.add_argument("--tp-size", "--tp", dest="tp_size", type=int, default=1)
    p.add_argument("--dp-size", "--dp", dest="dp_size", type=int, default=1)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=30000)
    p.add_argument("--mem-fraction-static", dest="mem_fraction_static", type=float, default=None)
    p.add_argument("--context-length", dest="context_length", type=int, default=None)
    p.add_argument("--served-model-name", dest="served_model_name", default=None)
    p.add_argument("--max-running-requests", dest="max_running_requests", type=int, default=None)
    p.add_argument("--max-total-tokens", dest="max_total_tokens", type=int, default=None)
    p.add_argument("--chunked-prefill-size", dest="chunked_prefill_size", type=int, default=None)
    p.add_argument("--cuda-graph-max-bs", dest="cuda_graph_max_bs", type=int, default=None)
    p.add_argument("--kv-cache-dtype", dest="kv_cache_dtype", default="auto")
    p.add_argument("--speculative-algorithm", dest="speculative_algorithm", default=None)
    p.add_argument("--speculative-num-steps", dest="speculative_num_steps", type=int, default=None)
    p.add_argument("--speculative-eagle-topk", dest="speculative_eagle_topk", type=int, default=None)
    p.add_argument("--speculative-num-draft-tokens", dest="speculative_num_draft_tokens", type=int, default=None)
    p.add_argument("--mamba-scheduler-strategy", dest="mamba_scheduler_strategy", default="no_buffer")
    p.add_argument("--disable-radix-cache", dest="disable_radix_cache", action="store_true")
    p.add_argument("--disable-cuda-graph", dest="disable_cuda_graph", action="store_true")
    p.add_argument("--trust-remote-code", dest="trust_remote_code", action="store_true")
    args, _unknown = p.parse_known_args(argv)
    return args


def log(msg: str, rank: int | None = 0) -> None:
    stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    where = f" TP{rank}" if rank is not None else ""
    sys.stdout.write(f"[{stamp}{where}] {msg}\n")
    sys.stdout.flush()


def read_model(path: str) -> tuple[dict, int | None]:
    """The model's config.json and its safetensors total size, when the path has them."""
    config: dict = {}
    total: int | None = None
    try:
        with open(os.path.join(path, "config.json"), encoding="utf-8") as fh:
            config = json.load(fh)
    except (OSError, ValueError):
        pass
    try:
        with open(os.path.join(path, "model.safetensors.index.json"), encoding="utf-8") as fh:
            total = int(json.load(fh)["metadata"]["total_size"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return config, total


class State:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.ready = False
        self.config, total_bytes = read_model(args.model_path)
        self.text = self.config.get("text_config", self.config)
        self.arch = (self.config.get("architectures") or ["LlamaForCausalLM"])[0]
        tp = max(1, args.tp_size)
        weights = os.environ.get("STANDIN_WEIGHTS_GIB")
        self.weights_gib = float(weights) if weights else (total_bytes / tp / GIB if total_bytes else 2.0)
        self.free_gib = float(os.environ.get("STANDIN_FREE_GIB", "47.0"))
        self.mfs = args.mem_fraction_static if args.mem_fraction_static is not None else 0.85
        self.spec = (args.speculative_algorithm or "").upper() or None
        if self.spec == "NEXTN":  # server_args.py turns NEXTN into EAGLE
            self.spec = "EAGLE"
        self.spec_steps = args.speculative_num_steps if self.spec else None
        if self.spec and self.spec_steps is None:
            self.spec_steps = 3
        self.context = args.context_length or int(self.text.get("max_position_embeddings", 32768))
        self.max_running = args.max_running_requests or (48 if self.spec else 2048)
        self.hybrid = "full_attention_interval" in self.text or "layer_types" in self.text
        self.kv_tokens = 0
        self.kv_gib = 0.0
        self.graph_gib = 0.0 if args.disable_cuda_graph else 0.61
        self.accept_lengths: list[float] = []

    def cell_bytes(self) -> int:
        """KV bytes per token per GPU for full-attention layers (sglang-facts.md)."""
        t = self.text
        layers = int(t.get("num_hidden_layers", 32))
        if self.hybrid:
            layers = layers // int(t.get("full_attention_interval", 4))
        kv_heads = int(t.get("num_key_value_heads", t.get("num_attention_heads", 8)))
        head_dim = int(t.get("head_dim", 128))
        per_gpu_heads = max(1, kv_heads // max(1, self.args.tp_size))
        return per_gpu_heads * head_dim * 2 * layers * 2

    def server_info(self) -> dict:
        a = self.args
        ignore = FAIL == "ignore-flags"
        info = {
            "model_path": a.model_path,
            "served_model_name": a.served_model_name or a.model_path,
            "host": a.host,
            "port": a.port,
            "tp_size": 1 if ignore else a.tp_size,
            "dp_size": a.dp_size,
            "mem_fraction_static": 0.88 if ignore else self.mfs,
            "context_length": None if ignore else a.context_length,
            "speculative_algorithm": None if ignore else self.spec,
            "speculative_num_steps": None if ignore else self.spec_steps,
            "speculative_eagle_topk": a.speculative_eagle_topk,
            "speculative_num_draft_tokens": a.speculative_num_draft_tokens,
            "max_running_requests": self.max_running,
            "chunked_prefill_size": a.chunked_prefill_size,
            "cuda_graph_max_bs": a.cuda_graph_max_bs,
            "kv_cache_dtype": a.kv_cache_dtype,
            "disable_radix_cache": a.disable_radix_cache,
            "mamba_scheduler_strategy": a.mamba_scheduler_strategy,
            "max_total_num_tokens": self.kv_tokens,
            "version": os.environ.get("STANDIN_VERSION", "0.5.11"),
        }
        state: dict = {
            "memory_usage": {
                "weight": round(self.weights_gib, 2),
                "kvcache": round(self.kv_gib, 2),
                "token_capacity": self.kv_tokens,
                "graph": self.graph_gib,
            }
        }
        if self.spec and self.accept_lengths:
            state["avg_spec_accept_length"] = sum(self.accept_lengths) / len(self.accept_lengths)
        info["internal_states"] = [state]
        return info


def die_like_sglang(state: State, exc_line: str, frames: list[str]) -> None:
    """A scheduler's traceback, then the parent's sigquit line, then the parent's exit
    (utils/common.py kill_process_tree: SIGKILL to itself, then sys.exit(0), which is
    what remains when it runs as PID 1 in a container and the SIGKILL is ignored)."""
    log("Scheduler hit an exception: Traceback (most recent call last):", rank=0)
    for f in frames:
        sys.stdout.write(f'  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/{f}", line 1, in <module>\n')
        sys.stdout.write("    ...\n")
    sys.stdout.write(exc_line + "\n\n")
    sys.stdout.flush()
    time.sleep(STEP_S)
    log("Received sigquit from a child process. It usually means the child failed.", rank=None)
    if os.getpid() != 1:
        os.kill(os.getpid(), signal.SIGKILL)
    sys.exit(0)


def start_up(state: State) -> None:
    a = state.args
    tp = max(1, a.tp_size)
    for rank in range(tp):
        log(f"Load weight begin. avail mem={state.free_gib:.2f} GB", rank)
    time.sleep(STEP_S)
    if FAIL == "early-exit":
        sys.stdout.flush()
        os._exit(3)
    avail = state.free_gib - state.weights_gib
    for rank in range(tp):
        log(f"Load weight end. elapsed={STEP_S:.2f} s, type={state.arch}, dtype=torch.bfloat16, "
            f"avail mem={avail:.2f} GB, mem usage={state.weights_gib:.2f} GB.", rank)
    time.sleep(STEP_S)
    if FAIL == "hang":
        while True:
            time.sleep(3600)
    # model_runner_kv_cache_mixin.py: rest = mfs*F0 - W (sglang-facts.md)
    rest_gib = state.mfs * state.free_gib - state.weights_gib
    if state.hybrid and rest_gib > 0:
        slots = min(state.max_running, 97)
        per_req_gib = 0.03
        log(f"Mamba Cache is allocated. max_mamba_cache_size: {slots}, conv_state size: "
            f"{slots * per_req_gib * 0.2:.2f}GB, ssm_state size: {slots * per_req_gib * 0.8:.2f}GB ")
        rest_gib -= slots * per_req_gib
    tokens = int(rest_gib * GIB // state.cell_bytes()) if rest_gib > 0 else 0
    tokens = tokens // 64 * 64
    if a.max_total_tokens:
        tokens = min(tokens, a.max_total_tokens)
    if FAIL == "not-enough-memory" or tokens <= 0:
        die_like_sglang(
            state,
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
            f"Current value: mem_fraction_static={state.mfs}",
            ["managers/scheduler.py", "managers/tp_worker.py", "model_executor/model_runner.py",
             "model_executor/pool_configurator.py"],
        )
    state.kv_tokens = tokens
    state.kv_gib = tokens * state.cell_bytes() / GIB
    log(f"KV Cache is allocated. #tokens: {tokens}, K size: {state.kv_gib / 2:.2f} GB, V size: {state.kv_gib / 2:.2f} GB")
    pool_avail = state.free_gib - state.weights_gib - state.kv_gib
    log(f"Memory pool end. avail mem={pool_avail:.2f} GB")
    if not a.disable_cuda_graph:
        log(f"Capture cuda graph begin. This can take up to several minutes. avail mem={pool_avail:.2f} GB")
        time.sleep(STEP_S)
        if FAIL == "child-traceback":
            die_like_sglang(
                state,
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total "
                "capacity of 47.41 GiB of which 9.12 MiB is free.",
                ["managers/scheduler.py", "model_executor/model_runner.py", "model_executor/cuda_graph_runner.py"],
            )
        log(f"Capture cuda graph end. Time elapsed: {STEP_S:.2f} s. mem usage={state.graph_gib:.2f} GB. "
            f"avail mem={pool_avail - state.graph_gib:.2f} GB.")
    log(f"max_total_num_tokens={tokens}, chunked_prefill_size={a.chunked_prefill_size or 4096}, "
        f"max_prefill_tokens=16384, max_running_requests={state.max_running}, context_len={state.context}, "
        f"available_gpu_mem={pool_avail - state.graph_gib:.2f} GB")


def generate(state: State, body: dict) -> dict:
    text = str(body.get("text", ""))
    params = body.get("sampling_params") or {}
    n = int(params.get("max_new_tokens", 16))
    seed = sum(ord(c) for c in text)
    vocab = int(state.text.get("vocab_size", 32000))
    ids = [(seed * 31 + i * 7919) % vocab for i in range(n)]
    meta = {
        "id": f"{seed:x}",
        "prompt_tokens": len(text.split()) or 1,
        "completion_tokens": n,
        "finish_reason": {"type": "length", "length": n},
        "e2e_latency": 0.01,
    }
    if state.spec:
        accept = 1.0 + (state.spec_steps or 1) * 0.55
        verify = max(1, math.ceil(n / accept))
        meta["spec_verify_ct"] = verify
        meta["spec_accept_length"] = n / verify
        state.accept_lengths.append(n / verify)
    return {"text": " ".join(f"t{i}" for i in ids), "output_ids": ids, "meta_info": meta}


def make_handler(state: State) -> type[BaseHTTPRequestHandler]:
    old_api = os.environ.get("STANDIN_OLD_API") == "1"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt: str, *args: object) -> None:
            log(f'INFO:     {self.client_address[0]} - "{self.command} {self.path}" {args[1] if len(args) > 1 else ""}', None)

        def send_json(self, code: int, obj: object) -> None:
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            path = self.path.split("?")[0]
            if path in ("/health", "/health_generate"):
                self.send_json(200 if state.ready else 503, {} if state.ready else {"detail": "starting"})
            elif path == "/get_server_info" or (path == "/server_info" and not old_api):
                self.send_json(200, state.server_info())
            elif path == "/v1/models":
                a = state.args
                self.send_json(200, {"object": "list", "data": [{
                    "id": a.served_model_name or a.model_path, "object": "model", "owned_by": "sglang",
                    "root": a.served_model_name or a.model_path, "max_model_len": state.context}]})
            else:
                self.send_json(404, {"detail": "Not Found"})

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self.send_json(400, {"error": "invalid JSON"})
                return
            if self.path == "/generate" and state.ready:
                self.send_json(200, generate(state, body))
            elif self.path == "/generate":
                self.send_json(503, {"detail": "starting"})
            else:
                self.send_json(404, {"detail": "Not Found"})

    return Handler


def main(argv: list[str] | None = None) -> None:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # SIGTERM: uvicorn's graceful shutdown, which docker stop sends
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    state = State(args)
    log(f"server_args=ServerArgs(model_path='{args.model_path}', tp_size={args.tp_size}, "
        f"mem_fraction_static={state.mfs}, context_length={args.context_length}, "
        f"speculative_algorithm={state.spec!r}, port={args.port})", None)
    start_up(state)
    # http_server.py binds the port only after the scheduler is up
    server = ThreadingHTTPServer((args.host, args.port), make_handler(state))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    log("INFO:     Started server process [1]", None)
    log(f"INFO:     Uvicorn running on http://{args.host}:{args.port} (Press CTRL+C to quit)", None)
    time.sleep(STEP_S)  # the warmup request; /health_generate answers 503 until it is done
    state.ready = True
    log("The server is fired up and ready to roll!", None)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
