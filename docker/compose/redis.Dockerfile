# Redis from Debian's packages, for docker/compose.yaml where the official image cannot be pulled:
# BRAID_REDIS_IMAGE names it. Runs as the package's redis user in /data, as the official image.
# Build from the repo root: docker build -f docker/compose/redis.Dockerfile .
ARG BASE=debian:bookworm-slim
FROM ${BASE}
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir /data && chown redis:redis /data
USER redis
WORKDIR /data
EXPOSE 6379
CMD ["redis-server", "--protected-mode", "no"]
