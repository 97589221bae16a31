#!/usr/bin/env bash
# BullMQ's rate limiter on this machine: the peer of bench/precision.cc workload (a).
# Installs redis-server (Debian) and bullmq (npm) into var/peers/ if missing, starts a
# private redis on 127.0.0.1:6390 (appendfsync everysec), runs bullmq-limiter.js
# (copied from the shared peer-bench: 200 jobs queued, limiter {max:10, duration:1000},
# worker concurrency 4) and prints its JSON. Stops redis afterwards.
set -euo pipefail
cd "$(dirname "$0")/../.."
PEER="$(pwd)/var/peers"
mkdir -p "$PEER/bullmq" "$PEER/redis-data"

need=()
command -v redis-server >/dev/null || need+=(redis-server)
command -v npm >/dev/null || need+=(nodejs npm)  # the machine's Node.js usually brings npm
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y "${need[@]}" >/dev/null
fi
if [ ! -d "$PEER/bullmq/node_modules/bullmq" ]; then
  (cd "$PEER/bullmq" && npm init -y >/dev/null && npm install --silent bullmq@6.7.0 ioredis >/dev/null)
fi

cat > "$PEER/redis.conf" <<CONF
bind 127.0.0.1
port 6390
daemonize no
dir $PEER/redis-data
appendonly yes
appendfsync everysec
save ""
CONF
redis-server "$PEER/redis.conf" >"$PEER/redis.log" 2>&1 &
REDIS=$!
trap 'kill $REDIS 2>/dev/null || true; wait $REDIS 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do redis-cli -p 6390 ping >/dev/null 2>&1 && break; sleep 0.05; done

NODE_PATH="$PEER/bullmq/node_modules" timeout 120 node bench/peers/bullmq-limiter.js \
  --jobs 200 --max 10 --duration 1000 --wconc 4 --port 6390
