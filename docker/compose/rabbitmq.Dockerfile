# RabbitMQ from Debian's packages, for docker/compose.yaml where the official image cannot be
# pulled: BRAID_RABBITMQ_IMAGE names it. Takes RABBITMQ_DEFAULT_USER/PASS as the official image
# does. Build from the repo root: docker build -f docker/compose/rabbitmq.Dockerfile .
ARG BASE=debian:bookworm-slim
FROM ${BASE}
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends rabbitmq-server \
    && rm -rf /var/lib/apt/lists/*
COPY docker/compose/rabbitmq.sh /usr/local/bin/rabbitmq.sh
ENV RABBITMQ_LOGS=-
EXPOSE 5672
CMD ["/bin/sh", "/usr/local/bin/rabbitmq.sh"]
