# hmsproxy: the Hive Metastore server, built from this repository.
FROM python:3.11-slim

WORKDIR /app
# The dependencies first, in a layer of their own read from pyproject.toml alone: a change to the code reuses it
# instead of installing them again.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
    && pip install --no-cache-dir -r /tmp/requirements.txt hatchling && rm /tmp/requirements.txt
COPY README.md ./
COPY thrift ./thrift
COPY src ./src
# /data belongs to group 0 and is writable by it, as by its owner: a platform that runs the image under an
# arbitrary uid (OpenShift's restricted policy) runs it in group 0, and the server can write there too.
RUN pip install --no-cache-dir --no-deps --no-build-isolation . \
    && useradd --create-home --uid 1000 --gid 0 hmsproxy \
    && mkdir -p /data/warehouse && chown -R 1000:0 /data && chmod -R g=u /data

USER 1000
WORKDIR /data
ENV HMSPROXY_HOST=0.0.0.0 \
    HMSPROXY_PORT=9083 \
    HMSPROXY_METRICS_PORT=9090 \
    HMSPROXY_WAREHOUSE=/data/warehouse
# /data holds the embedded database of the default URL (sqlite:///hmsproxy.db, relative to this working
# directory) and a local warehouse (/data/warehouse; docker-compose.yml puts the warehouse on MinIO instead).
VOLUME ["/data"]
EXPOSE 9083 9090
# Healthy once prewarm has finished (/readyz answers 503 until then, 200 after; always 200 with --no-cache),
# so whatever waits for a healthy container gets one that answers from its cache. The start period leaves
# room for the prewarm of a large metastore (about 10 s per 100,000 partitions measured on MariaDB) without
# counting its failures. Exec form: no shell between the runtime and the check.
HEALTHCHECK --interval=10s --timeout=3s --start-period=300s --retries=6 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/readyz' % os.environ.get('HMSPROXY_METRICS_PORT', '9090'), timeout=2)"]
ENTRYPOINT ["hmsproxy"]
CMD ["serve"]
