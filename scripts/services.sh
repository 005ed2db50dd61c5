#!/usr/bin/env bash
# Make sure the services the tests talk to are up: PostgreSQL on 127.0.0.1:5432 and Redis on
# 127.0.0.1:6379. Starts them (as this machine's images install them) when they are down;
# fails, never skips, when they cannot be started.
set -euo pipefail

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

if ! pg_up; then
  echo "services: starting PostgreSQL" >&2
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start || true
  for _ in $(seq 1 30); do pg_up && break; sleep 1; done
  pg_up || { echo "services: PostgreSQL is not reachable on 127.0.0.1:5432" >&2; exit 1; }
fi
if ! redis_up; then
  echo "services: starting Redis" >&2
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
  for _ in $(seq 1 30); do redis_up && break; sleep 1; done
  redis_up || { echo "services: Redis is not reachable on 127.0.0.1:6379" >&2; exit 1; }
fi
