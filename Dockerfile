# placement-numa from its wheel, installed against the tested constraints (constraints.txt),
# running as the unprivileged user `placement` (uid 42482) with its configuration mounted at
# /etc/placement (placement.conf, policy.yaml), as OpenStack's container images lay it out:
#
#   docker build -t placement-numa .
#   docker run --rm -v /etc/placement:/etc/placement:ro placement-numa placement-numa db upgrade
#   docker run -d -p 8778:8778 -v /etc/placement:/etc/placement:ro placement-numa
#
# PLACEMENT_NUMA_* variables override the file (docker-compose.yml sets the database URL so).
# `docker kill -s HUP` reloads policy and logging; the HEALTHCHECK asks /healthcheck.
FROM python:3.11-slim AS build
WORKDIR /src
COPY . .
RUN pip wheel --no-cache-dir --no-deps -w /wheels . && cp constraints.txt /wheels/

FROM python:3.11-slim
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir -c /wheels/constraints.txt /wheels/placement_numa-*.whl \
    && rm -rf /wheels \
    && groupadd --system --gid 42482 placement \
    && useradd --system --uid 42482 --gid placement --home-dir /var/lib/placement-numa \
        --shell /usr/sbin/nologin placement \
    && install -d -o placement -g placement -m 0750 /var/lib/placement-numa \
    && install -d -m 0755 /etc/placement
WORKDIR /var/lib/placement-numa
ENV PLACEMENT_NUMA_CONFIG_FILE=/etc/placement/placement.conf \
    OS_PLACEMENT_CONFIG_DIR=/etc/placement \
    PLACEMENT_NUMA_HOST=0.0.0.0 \
    PLACEMENT_NUMA_PORT=8778
VOLUME ["/etc/placement"]
USER placement
EXPOSE 8778
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8778/healthcheck', timeout=4).status != 200)"]
# Migrations run once, in a separate step (`placement-numa db upgrade`, the compose file's
# `migrate` service); the server itself then starts without migrating. A missing or bad
# /etc/placement/placement.conf ends the container at once with one line and exit code 2.
CMD ["placement-numa", "serve", "--no-migrate"]
