# One image for the components:
#   docker run IMAGE extender --listen 0.0.0.0:8888 ...
#   docker run IMAGE vkubelet --kubeconfig ...
#   docker run IMAGE armada_api --listen 0.0.0.0:50051 --tls-cert ... --tls-key ...
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY armada_bridge ./armada_bridge
COPY extender ./extender
COPY vkubelet ./vkubelet
COPY armada_api ./armada_api
COPY cli ./cli
RUN pip install --no-cache-dir --prefix=/install .
# Required by armada-client, never run: grpcio-tools and the setuptools it requires.
RUN cd /install/lib/python3.11/site-packages \
    && rm -r -f grpc_tools grpcio_tools-*.dist-info setuptools setuptools-*.dist-info pkg_resources \
       _distutils_hack distutils-precedence.pth

FROM python:3.11-slim
# openssl: the vkubelet makes a self-signed serving certificate when none is mounted. socat: relay
# pods (vkubelet/relay_pods.py) run it.
RUN apt-get update && apt-get install -y --no-install-recommends openssl socat && rm -rf /var/lib/apt/lists/* \
    && useradd --uid 65532 --no-create-home --shell /usr/sbin/nologin bridge
COPY --from=build /install /usr/local
USER 65532
ENTRYPOINT ["python", "-m"]
CMD ["extender"]
