# Rendered by imgbuild 0.1.0 from dockerfiles/sglang.Dockerfile.tmpl: do not edit.
# target golden-sglang: SGLang 0.5.11, CUDA 13.0, torch 2.11.0, Python 3.12, linux/amd64
# recipe sha256:47864bce856328c10a04c56ac6f33f74e20af3faee75f9e4ced45c026ffe0c77

# Stage "base": the pinned CUDA image, Python and the non-root user (uid 1000,
# which Ubuntu 24.04 images give to a user "ubuntu": that one is removed).
FROM nvidia/cuda:13.0.1-devel-ubuntu24.04@sha256:7d2f6a8c2071d911524f95061a0db363e24d27aa51ec831fcccf9e76eb72bc92 AS base
ENV DEBIAN_FRONTEND=noninteractive \
    LANG=C.UTF-8 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3.12 python3.12-venv python3.12-dev ca-certificates libnuma1 \
 && rm -rf /var/lib/apt/lists/* \
 && python3.12 -c "import platform, sys; v = platform.libc_ver()[1]; sys.exit(0 if tuple(map(int, v.split('.'))) >= tuple(map(int, '2.34'.split('.'))) else 'glibc ' + v + ' of the base is older than 2.34, which the locked wheels need')" \
 && python3.12 -m venv /opt/venv \
 && (userdel --remove ubuntu 2>/dev/null || true) \
 && useradd --create-home --uid 1000 --shell /bin/bash sglang

# Stage "stack": SGLang and its whole stack (torch included) from the hash lock.
# The CA bundle is copied into this stage only: the final image never sees it.
FROM base AS stack
ARG PIP_INDEX_URL=https://pypi.org/simple
COPY requirements.lock ca-bundle.crt /tmp/imgbuild/
RUN if [ -s /tmp/imgbuild/ca-bundle.crt ]; then export PIP_CERT=/tmp/imgbuild/ca-bundle.crt; fi \
 && /opt/venv/bin/pip install --index-url "$PIP_INDEX_URL" --require-hashes --no-deps -r /tmp/imgbuild/requirements.lock
# The import smoke, no GPU needed: import what `python -m sglang.launch_server` imports at start,
# then pip check and `--help`. A stack that cannot start the server fails the build here, naming the
# root error and the packages in its traceback. Its own COPY keeps the install layer cached.
COPY import-smoke.py /tmp/imgbuild/
RUN /opt/venv/bin/python /tmp/imgbuild/import-smoke.py

# The final image: the locked environment first (the heavy layer), then what is
# specific to the target, so a change of model or flags reuses the torch layer.
FROM base
COPY --from=stack /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    VIRTUAL_ENV=/opt/venv
USER sglang
WORKDIR /home/sglang
EXPOSE 30000
LABEL org.opencontainers.image.title="sglang-0.5.11" \
      org.opencontainers.image.description="SGLang 0.5.11 serving image for golden-sglang" \
      org.opencontainers.image.version="0.5.11" \
      org.opencontainers.image.base.name="nvidia/cuda:13.0.1-devel-ubuntu24.04@sha256:7d2f6a8c2071d911524f95061a0db363e24d27aa51ec831fcccf9e76eb72bc92" \
      org.opencontainers.image.source="https://github.com/sgl-project/sglang" \
      org.opencontainers.image.licenses="Apache-2.0" \
      io.imgbuild.recipe-digest="sha256:47864bce856328c10a04c56ac6f33f74e20af3faee75f9e4ced45c026ffe0c77" \
      io.imgbuild.recipe="{\"base\":\"cuda-13.0.1-devel-ubuntu24.04\",\"cuda\":\"13.0\",\"engine\":\"0.5.11\",\"glibc\":\"2.34\",\"gpus\":\"RTX A6000x2\",\"kind\":\"sglang\",\"launch_flags\":[\"--tp\",\"2\",\"--speculative-algorithm\",\"NEXTN\"],\"lock\":null,\"model\":\"Qwen/Qwen3.6-27B\",\"name\":\"golden-sglang\",\"packages\":[],\"platform\":\"linux/amd64\",\"python\":\"3.12\",\"source\":\"golden\",\"torch\":\"2.11.0\"}" \
      io.imgbuild.target="golden-sglang" \
      io.imgbuild.engine="0.5.11" \
      io.imgbuild.cuda="13.0" \
      io.imgbuild.torch="2.11.0" \
      io.imgbuild.version="0.1.0"
ENTRYPOINT ["python", "-m", "sglang.launch_server"]
CMD ["--model-path", "Qwen/Qwen3.6-27B", "--tp", "2", "--speculative-algorithm", "NEXTN"]
