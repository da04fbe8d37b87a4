# Rendered by imgbuild 0.1.0 from dockerfiles/sglang.Dockerfile.tmpl: do not edit.
# target golden-sglang: SGLang 0.5.11, CUDA 13.0, torch 2.11.0, Python 3.12, linux/amd64
# recipe sha256:9ad7a1356ec8dd94b4bbe7daafadf554ef842547790aaba43103d0bb3cea176c

# One stage, so the 8.6 GB environment is never copied between stages: the pinned CUDA image,
# Python and the non-root user (uid 1000, which Ubuntu 24.04 images give to a user "ubuntu":
# that one is removed).
FROM nvidia/cuda:13.0.1-devel-ubuntu24.04@sha256:7d2f6a8c2071d911524f95061a0db363e24d27aa51ec831fcccf9e76eb72bc92
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

# SGLang and its whole stack (torch included) from the hash lock, installed by uv 0.13.9 (the
# hashes of its manylinux x86_64 and aarch64 wheels on PyPI), which is removed again. The CA
# bundle (`imgbuild build --ca-bundle`) comes from the URL in IMGBUILD_CA_URL, a server on the
# build host's loopback, and is deleted in this same step: no layer holds it (a COPY'd file would
# stay in its layer), and the URL, the same for the same bundle, keeps the step's cache key. The fetch
# bypasses any proxy the build is given (loopback) and checks the bytes against the sha256 in the URL.
ARG PIP_INDEX_URL=https://pypi.org/simple
ARG IMGBUILD_CA_URL=
COPY requirements.lock /tmp/imgbuild/
RUN set -e; \
    if [ -n "$IMGBUILD_CA_URL" ]; then \
      /opt/venv/bin/python -c "import hashlib, sys, urllib.request; u = sys.argv[1]; d = urllib.request.build_opener(urllib.request.ProxyHandler({})).open(u, timeout=60).read(); sys.exit('imgbuild: the CA bundle served at ' + u + ' is not the one its name says') if hashlib.sha256(d).hexdigest() + '.pem' != u.rsplit('/', 1)[-1] else open('/tmp/imgbuild/ca.pem', 'wb').write(d)" "$IMGBUILD_CA_URL"; \
      export SSL_CERT_FILE=/tmp/imgbuild/ca.pem PIP_CERT=/tmp/imgbuild/ca.pem; \
    fi; \
    echo "uv==0.13.9 --hash=sha256:d7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19 --hash=sha256:5435c5ce14a56431208ca0996416d310f1598e8c2c8ba707688985a16bb82dbe --hash=sha256:ecb6028d79dc96fbeafffe5c8af62a7099487ebc05a701e76714eebcffd06375" > /tmp/imgbuild/uv.txt; \
    /opt/venv/bin/pip install --quiet --index-url "$PIP_INDEX_URL" --require-hashes --no-deps --target /tmp/imgbuild/uv -r /tmp/imgbuild/uv.txt; \
    /tmp/imgbuild/uv/bin/uv pip install --no-cache --compile-bytecode --index-url "$PIP_INDEX_URL" --require-hashes --no-deps --python /opt/venv/bin/python -r /tmp/imgbuild/requirements.lock; \
    rm -rf /tmp/imgbuild/uv /tmp/imgbuild/uv.txt /tmp/imgbuild/ca.pem
# The import smoke, no GPU needed: import what `python -m sglang.launch_server` imports at start,
# then pip check and `--help`. A stack that cannot start the server fails the build here, naming the
# root error and the packages in its traceback. Its own COPY keeps the install layer cached.
COPY import-smoke.py /tmp/imgbuild/
RUN /opt/venv/bin/python /tmp/imgbuild/import-smoke.py

# What is specific to the target comes last, so a change of model or flags reuses the torch layer.
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
      io.imgbuild.recipe-digest="sha256:9ad7a1356ec8dd94b4bbe7daafadf554ef842547790aaba43103d0bb3cea176c" \
      io.imgbuild.recipe="{\"base\":\"cuda-13.0.1-devel-ubuntu24.04\",\"cuda\":\"13.0\",\"engine\":\"0.5.11\",\"glibc\":\"2.34\",\"gpus\":\"RTX A6000x2\",\"kind\":\"sglang\",\"launch_flags\":[\"--tp\",\"2\",\"--speculative-algorithm\",\"NEXTN\"],\"lock\":null,\"model\":\"Qwen/Qwen3.6-27B\",\"name\":\"golden-sglang\",\"packages\":[],\"platform\":\"linux/amd64\",\"python\":\"3.12\",\"source\":\"golden\",\"torch\":\"2.11.0\"}" \
      io.imgbuild.target="golden-sglang" \
      io.imgbuild.engine="0.5.11" \
      io.imgbuild.cuda="13.0" \
      io.imgbuild.torch="2.11.0" \
      io.imgbuild.version="0.1.0"
ENTRYPOINT ["python", "-m", "sglang.launch_server"]
CMD ["--model-path", "Qwen/Qwen3.6-27B", "--tp", "2", "--speculative-algorithm", "NEXTN"]
