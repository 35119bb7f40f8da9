#!/bin/sh
# The Debian-built RabbitMQ's start: the user from the environment, reachable from other
# containers (Debian's guest may only connect from localhost), logs on the console.
set -eu
cat >/etc/rabbitmq/rabbitmq.conf <<CONF
default_user = ${RABBITMQ_DEFAULT_USER:-guest}
default_pass = ${RABBITMQ_DEFAULT_PASS:-guest}
loopback_users = none
CONF
exec /usr/sbin/rabbitmq-server
