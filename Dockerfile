# One image for both components:
#   docker run IMAGE extender --listen 0.0.0.0:8888 ...
#   docker run IMAGE vkubelet --kubeconfig ...
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY armada_bridge ./armada_bridge
COPY extender ./extender
COPY vkubelet ./vkubelet
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
RUN useradd --uid 65532 --no-create-home --shell /usr/sbin/nologin bridge
COPY --from=build /install /usr/local
USER 65532
ENTRYPOINT ["python", "-m"]
CMD ["extender"]
