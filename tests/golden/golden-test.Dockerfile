# Rendered by imgbuild 0.1.0 from dockerfiles/test.Dockerfile.tmpl: do not edit.
# target golden-test (kind: test): SGLang 0.5.9 without its dependencies, Python 3.11, linux/amd64
# recipe sha256:19900bdbc93a76c14d0059000d0d820accf6bf164943c73f5578b6dfcc1868af

# The same shape as sglang.Dockerfile.tmpl on a small base that already has Python: one stage,
# the install by a hash-pinned uv with the CA bundle fetched from the build host's loopback and
# deleted in the same step, so no layer holds it.
FROM 127.0.0.1:5055/imgbuild-test-base@sha256:1111111111111111111111111111111111111111111111111111111111111111
ENV LANG=C.UTF-8 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
RUN python3 -c "import platform, sys; v = platform.libc_ver()[1]; sys.exit(0 if tuple(map(int, v.split('.'))) >= tuple(map(int, '2.34'.split('.'))) else 'glibc ' + v + ' of the base is older than 2.34, which the locked wheels need')" \
 && python3 -m venv /opt/venv \
 && useradd --create-home --uid 1000 --shell /bin/bash sglang

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
    /tmp/imgbuild/uv/bin/uv pip install --no-cache --compile-bytecode --index-url "$PIP_INDEX_URL" --require-hashes --no-deps --only-binary :all: --python /opt/venv/bin/python -r /tmp/imgbuild/requirements.lock; \
    rm -rf /tmp/imgbuild/uv /tmp/imgbuild/uv.txt /tmp/imgbuild/ca.pem

ENV PATH=/opt/venv/bin:$PATH \
    VIRTUAL_ENV=/opt/venv
USER sglang
WORKDIR /home/sglang
LABEL org.opencontainers.image.title="sglang-0.5.9-test" \
      org.opencontainers.image.description="imgbuild test image for golden-test" \
      org.opencontainers.image.version="0.5.9" \
      org.opencontainers.image.base.name="127.0.0.1:5055/imgbuild-test-base@sha256:1111111111111111111111111111111111111111111111111111111111111111" \
      io.imgbuild.recipe-digest="sha256:19900bdbc93a76c14d0059000d0d820accf6bf164943c73f5578b6dfcc1868af" \
      io.imgbuild.recipe="{\"base\":\"127.0.0.1:5055/imgbuild-test-base@sha256:1111111111111111111111111111111111111111111111111111111111111111\",\"cuda\":null,\"engine\":\"0.5.9\",\"glibc\":\"2.34\",\"gpus\":null,\"kind\":\"test\",\"launch_flags\":[],\"lock\":null,\"model\":null,\"name\":\"golden-test\",\"packages\":[\"sglang==0.5.9\",\"six==1.17.0\"],\"platform\":\"linux/amd64\",\"python\":\"3.11\",\"source\":\"golden\",\"torch\":null}" \
      io.imgbuild.target="golden-test" \
      io.imgbuild.engine="0.5.9" \
      io.imgbuild.cuda="none" \
      io.imgbuild.torch="none" \
      io.imgbuild.version="0.1.0"
ENTRYPOINT ["python", "-m", "sglang.launch_server"]
CMD []
