# Rendered by imgbuild 0.1.0 from dockerfiles/test.Dockerfile.tmpl: do not edit.
# target golden-test (kind: test): SGLang 0.5.9 without its dependencies, Python 3.11, linux/amd64
# recipe sha256:ad6698016d519ad26d200f63c98223c8e2bdf2955e49a9de95d83a447ac692a7

# The same shape as sglang.Dockerfile.tmpl on a small base that already has
# Python: base stage, a stack stage that alone sees the CA bundle, final image.
FROM 127.0.0.1:5055/imgbuild-test-base@sha256:1111111111111111111111111111111111111111111111111111111111111111 AS base
ENV LANG=C.UTF-8 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
RUN python3 -c "import platform, sys; v = platform.libc_ver()[1]; sys.exit(0 if tuple(map(int, v.split('.'))) >= tuple(map(int, '2.34'.split('.'))) else 'glibc ' + v + ' of the base is older than 2.34, which the locked wheels need')" \
 && python3 -m venv /opt/venv \
 && useradd --create-home --uid 1000 --shell /bin/bash sglang

FROM base AS stack
ARG PIP_INDEX_URL=https://pypi.org/simple
COPY requirements.lock ca-bundle.crt /tmp/imgbuild/
RUN if [ -s /tmp/imgbuild/ca-bundle.crt ]; then export PIP_CERT=/tmp/imgbuild/ca-bundle.crt; fi \
 && /opt/venv/bin/pip install --index-url "$PIP_INDEX_URL" --require-hashes --no-deps --only-binary=:all: -r /tmp/imgbuild/requirements.lock

FROM base
COPY --from=stack /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    VIRTUAL_ENV=/opt/venv
USER sglang
WORKDIR /home/sglang
LABEL org.opencontainers.image.title="sglang-0.5.9-test" \
      org.opencontainers.image.description="imgbuild test image for golden-test" \
      org.opencontainers.image.version="0.5.9" \
      org.opencontainers.image.base.name="127.0.0.1:5055/imgbuild-test-base@sha256:1111111111111111111111111111111111111111111111111111111111111111" \
      io.imgbuild.recipe-digest="sha256:ad6698016d519ad26d200f63c98223c8e2bdf2955e49a9de95d83a447ac692a7" \
      io.imgbuild.recipe="{\"base\":\"127.0.0.1:5055/imgbuild-test-base@sha256:1111111111111111111111111111111111111111111111111111111111111111\",\"cuda\":null,\"engine\":\"0.5.9\",\"glibc\":\"2.34\",\"gpus\":null,\"kind\":\"test\",\"launch_flags\":[],\"lock\":null,\"model\":null,\"name\":\"golden-test\",\"packages\":[\"sglang==0.5.9\",\"six==1.17.0\"],\"platform\":\"linux/amd64\",\"python\":\"3.11\",\"source\":\"golden\",\"torch\":null}" \
      io.imgbuild.target="golden-test" \
      io.imgbuild.engine="0.5.9" \
      io.imgbuild.cuda="none" \
      io.imgbuild.torch="none" \
      io.imgbuild.version="0.1.0"
ENTRYPOINT ["python", "-m", "sglang.launch_server"]
CMD []
