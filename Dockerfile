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
# /data holds the embedded database of the default URL (sqlite:///hmsproxy.db, relative to this working
# directory) and the warehouse (/data/warehouse); one volume keeps both, and a volume mounted on
# /data/warehouse as well (docker-compose.yml) lets several instances share the warehouse. A second VOLUME
# line for /data/warehouse would hide the warehouse of an existing /data volume behind an empty one.
VOLUME ["/data"]
EXPOSE 9083 9090
# Healthy once prewarm has finished (/readyz answers 503 until then, 200 after; always 200 with --no-cache),
# so whatever waits for a healthy container gets one that answers from its cache. The start period leaves
# room for the prewarm of a large metastore (about 10 s per 100,000 partitions measured on MariaDB) without
# counting its failures.
HEALTHCHECK --interval=10s --timeout=3s --start-period=300s --retries=6 \
    CMD python -c "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/readyz' \
        % os.environ.get('HMSPROXY_METRICS_PORT', '9090'), timeout=2)"
ENTRYPOINT ["hmsproxy"]
CMD ["serve"]
