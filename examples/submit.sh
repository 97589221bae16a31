#!/usr/bin/env bash
# Submits one job with curl, politely: a 429 queue_full, a 503 or no answer is retried
# after Retry-After plus exponential backoff with full jitter; one Idempotency-Key and
# one absolute deadline serve every try (a retry after a lost answer cannot create a
# second job: the server replays the first); it gives up when the next try would come
# after the job's deadline, and at once on any other refusal.
#   SLUICE_TOKEN=<submit token> examples/submit.sh URL QUEUE PAYLOAD_JSON
# Optional environment: DEADLINE_IN_MS (default 60000) or DEADLINE (RFC 3339, absolute),
# IDEMPOTENCY_KEY (default random), BACKOFF_BASE_MS (500), BACKOFF_MAX_MS (10000).
# Prints the accepted job (JSON) on stdout, one line per try on stderr. Exit 0 accepted,
# 1 gave up at the deadline, 2 refused (4xx, including 429 deadline_unreachable).
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: SLUICE_TOKEN=... $0 URL QUEUE PAYLOAD_JSON" >&2; exit 2; }
url=$1 queue=$2 payload=$3
: "${SLUICE_TOKEN:?set SLUICE_TOKEN to a submit-scoped token}"
base=${BACKOFF_BASE_MS:-500} cap=${BACKOFF_MAX_MS:-10000}
key=${IDEMPOTENCY_KEY:-sub_$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')}

now_ms() { date +%s%3N; }
if [ -n "${DEADLINE:-}" ]; then
  deadline=$DEADLINE
else
  dl_ms=$(($(now_ms) + ${DEADLINE_IN_MS:-60000}))
  deadline=$(date -u -d "@$((dl_ms / 1000))" +%Y-%m-%dT%H:%M:%S).$(printf %03d $((dl_ms % 1000)))Z
fi
deadline_ms=$(date -d "$deadline" +%s%3N)
# The body is fixed once: the same key with a different body would be refused (422).
body=$(jq -cn --argjson payload "$payload" --arg deadline "$deadline" \
  '{payload: $payload, deadline: $deadline}')

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The token goes to curl through a config on stdin, never on its command line (ps).
try() {
  printf 'header = "Authorization: Bearer %s"\n' "$SLUICE_TOKEN" |
    curl -sS -K - -o "$tmp/body" -D "$tmp/headers" -w '%{http_code}' \
      -H 'Content-Type: application/json' -H "Idempotency-Key: $key" \
      --data-binary "$body" "$url/v1/queues/$queue/jobs" 2>"$tmp/curl_err" || true
}

for ((n = 1; ; n++)); do
  status=$(try)
  retry_after=0
  case $status in
    202)
      replayed=$(grep -i '^idempotent-replayed:' "$tmp/headers" | tr -d '\r' | awk '{print $2}' || true)
      echo "try $n: 202 accepted${replayed:+ (replayed: the job existed already)}" >&2
      cat "$tmp/body"
      echo
      exit 0
      ;;
    429 | 503 | 000 | 5??)
      error=$(jq -r '.error // empty' "$tmp/body" 2>/dev/null || true)
      [ "$status" = 000 ] && error="no answer: $(cat "$tmp/curl_err")"
      if [ "$error" = deadline_unreachable ]; then
        echo "try $n: 429 deadline_unreachable: $(jq -r .detail "$tmp/body")" >&2
        exit 2
      fi
      retry_after=$(grep -i '^retry-after:' "$tmp/headers" 2>/dev/null | tr -d '\r' |
        awk '{print $2}' || true)
      retry_after=${retry_after:-0}
      ;;
    *)
      echo "try $n: $status $(cat "$tmp/body")" >&2
      exit 2
      ;;
  esac
  # Retry-After (a floor) plus full jitter: random(0, min(cap, base * 2^(n-1))).
  ceiling=$base
  for ((i = 1; i < n && ceiling < cap; i++)); do ceiling=$((ceiling * 2)); done
  ((ceiling > cap)) && ceiling=$cap
  jitter=$(((RANDOM * 32768 + RANDOM) % (ceiling + 1)))
  delay=$((retry_after * 1000 + jitter))
  if (($(now_ms) + delay >= deadline_ms)); then
    echo "try $n: $status ${error:-}; giving up: the deadline would pass first" >&2
    exit 1
  fi
  echo "try $n: $status ${error:-}, Retry-After ${retry_after}s; retrying in ${delay} ms" >&2
  sleep "$((delay / 1000)).$(printf %03d $((delay % 1000)))"
done
