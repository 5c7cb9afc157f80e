# placement-numa from its wheel: the same commands tests/test_packaging.py runs
# (pip wheel --no-deps; pip install the wheel into a fresh environment; serve from an empty
# directory with the migrations shipped inside the package).
FROM python:3.11-slim AS build
WORKDIR /src
COPY . .
RUN pip wheel --no-cache-dir --no-deps -w /wheels .

FROM python:3.11-slim
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/placement_numa-*.whl && rm -rf /wheels
WORKDIR /var/lib/placement-numa
ENV PLACEMENT_NUMA_HOST=0.0.0.0 \
    PLACEMENT_NUMA_PORT=8778
EXPOSE 8778
# Migrations run once, in a separate step (`placement-numa db upgrade`, the compose file's
# `migrate` service); the server itself then starts without migrating.
CMD ["placement-numa", "serve", "--no-migrate"]
