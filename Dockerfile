# hmsproxy: the Hive Metastore server, built from this repository.
FROM python:3.11-slim

WORKDIR /app
COPY pyproject.toml README.md ./
COPY src ./src
COPY thrift ./thrift
RUN pip install --no-cache-dir . && useradd --create-home --uid 1000 hmsproxy \
    && mkdir -p /data/warehouse && chown -R hmsproxy /data

USER hmsproxy
WORKDIR /data
ENV HMSPROXY_HOST=0.0.0.0 \
    HMSPROXY_PORT=9083 \
    HMSPROXY_METRICS_PORT=9090 \
    HMSPROXY_WAREHOUSE=/data/warehouse
EXPOSE 9083 9090
HEALTHCHECK --interval=10s --timeout=3s --retries=6 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9090/healthz', timeout=2)"
ENTRYPOINT ["hmsproxy"]
CMD ["serve"]
