"""What certify reaches in and through its containers, besides the engine API itself.

- ``ServerHttp``: the SGLang server's HTTP API, through the port published on 127.0.0.1
  or, for a remote engine, through ``docker exec`` (``exec_client``, ``ExecTransport``).
  httpx's errors become ``ServerRequestFailed`` here, so flows see only imgbuild's tree.
- ``ContainerGpuProbe``: the GPUs of the engine's host, read with nvidia-smi in a short
  container (NVML cannot reach a remote DOCKER_HOST's GPUs).
"""

from __future__ import annotations

from typing import Any, Protocol

import httpx

from imgbuild.adapters import engine
from imgbuild.adapters.gpus import GpuDevice, GpuProcess, HostGpus
from imgbuild.errors import EnvironmentUnavailable, UsageError


class ServerRequestFailed(EnvironmentUnavailable):
    """An HTTP request to the server under test got no usable answer (not listening yet,
    connection reset, timed out, a body that is not JSON). The message is the cause's."""


class ServerHttp:
    """The server's HTTP API at ``base`` (``http://127.0.0.1:PORT``) through ``client``."""

    def __init__(self, client: httpx.Client, base: str) -> None:
        self.client = client
        self.base = base

    def get_json(self, path: str, timeout_s: float) -> tuple[int, Any]:
        """(status, decoded body); the body is None when it is not JSON."""
        try:
            resp = self.client.get(self.base + path, timeout=timeout_s)
        except httpx.HTTPError as exc:
            raise ServerRequestFailed(str(exc)) from exc
        try:
            return resp.status_code, resp.json()
        except ValueError:
            return resp.status_code, None

    def post_json(self, path: str, body: Any, timeout_s: float) -> tuple[int, bytes]:
        """POST ``body`` as JSON; (status, the answer's bytes) for the caller to decode."""
        try:
            resp = self.client.post(self.base + path, json=body, timeout=timeout_s)
        except httpx.HTTPError as exc:
            raise ServerRequestFailed(str(exc)) from exc
        return resp.status_code, resp.content


class _HasContainer(Protocol):
    container_id: str | None


class ExecTransport(httpx.BaseTransport):
    """httpx through ``docker exec``: each request is made by python inside the server
    container, to its own 127.0.0.1 (see engine.exec_http). Host and port of the URL are
    ignored; the container port is used. ``run.container_id`` is read per request: the
    container may not exist yet when the transport is made."""

    def __init__(self, eng: engine.Engine, run: _HasContainer, container_port: int, python: str = "python3") -> None:
        self.eng = eng
        self.run = run
        self.container_port = container_port
        self.python = python

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if not self.run.container_id:
            raise httpx.ConnectError("no container yet", request=request)
        timeout = request.extensions.get("timeout", {}).get("read") or 30.0
        path = request.url.raw_path.decode("ascii")
        answer = engine.exec_http(self.eng, self.run.container_id, engine.ExecHttpRequest(
            method=request.method, port=self.container_port, path=path, body=request.read() or None,
            timeout_s=float(timeout), python=self.python))
        if answer is None:
            raise httpx.ConnectError(f"nothing answers on port {self.container_port} in the container", request=request)
        status, body = answer
        return httpx.Response(status, content=body, request=request)


def exec_client(eng: engine.Engine, run: _HasContainer, container_port: int, python: str = "python3") -> httpx.Client:
    """An httpx client whose requests run inside ``run``'s container (ExecTransport)."""
    return httpx.Client(transport=ExecTransport(eng, run, container_port, python))


def parse_nvidia_smi(text: str) -> HostGpus:
    """The three sections ContainerGpuProbe prints, split by '---' lines: the GPU query, the
    compute-apps query (both ``--format=csv,noheader,nounits``) and nvidia-smi's banner."""
    parts = text.split("\n---\n")
    if len(parts) < 3:
        raise UsageError(f"unexpected nvidia-smi output: {text.strip()[:200]}")
    gpus_csv, apps_csv, banner = parts[0], parts[1], parts[2]
    procs: dict[str, list[GpuProcess]] = {}
    for line in apps_csv.strip().splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) >= 4 and cells[1].isdigit():
            used = int(cells[3]) if cells[3].isdigit() else 0
            procs.setdefault(cells[0], []).append(GpuProcess(pid=int(cells[1]), name=cells[2], used_memory_mib=used))
    devices = []
    driver = ""
    for line in gpus_csv.strip().splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) < 8 or not cells[0].isdigit():
            continue
        index, uuid, name, total, used, free, cap, driver = cells[:8]
        devices.append(GpuDevice(index=int(index), uuid=uuid, name=name, memory_total_mib=int(total),
                                 memory_used_mib=int(used), memory_free_mib=int(free), compute_capability=cap,
                                 processes=tuple(procs.get(uuid, ()))))
    cuda = ""
    marker = "CUDA Version:"
    if marker in banner:
        cuda = banner.split(marker, 1)[1].split()[0].strip("|")
    return HostGpus(driver_version=driver, cuda_driver_version=cuda, devices=tuple(devices))


class ContainerGpuProbe:
    """Reads the GPUs of the engine's host with nvidia-smi in a short container of ``image``
    (the NVIDIA runtime mounts nvidia-smi in): NVML for a remote DOCKER_HOST."""

    QUERY = (
        "nvidia-smi --query-gpu=index,uuid,name,memory.total,memory.used,memory.free,compute_cap,driver_version"
        " --format=csv,noheader,nounits; echo ---;"
        " nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv,noheader,nounits;"
        " echo ---; nvidia-smi"
    )

    def __init__(self, eng: engine.Engine, image: str) -> None:
        self.eng = eng
        self.image = image

    def read(self) -> HostGpus:
        code, output = engine.run_with_all_gpus(self.eng, self.image, ["sh", "-c", self.QUERY])
        if code != 0:
            raise EnvironmentUnavailable(f"nvidia-smi in {self.image} on the engine's host failed (exit {code}): "
                                         f"{output.strip()[-200:]}", hint="the engine's host needs the NVIDIA container toolkit")
        return parse_nvidia_smi(output)
