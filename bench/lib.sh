# Shell helpers the benchmark scripts share (sourced by bench/intake.sh and
# bench/drivers.sh): stopping the processes a run started, and their CPU time.
# The caller keeps the pids it started in the array PIDS.

# Stops one process we started: SIGTERM, then SIGKILL after $2 seconds (default 20).
stop_pid() {
  local pid="$1" limit="${2:-20}" i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < limit * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
    sleep 0.1
  done
  echo "   (pid $pid ignored SIGTERM for ${limit}s: killed)" >&2
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

forget_pid() {  # drops a stopped pid from the cleanup list
  local p keep=()
  for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
  PIDS=("${keep[@]}")
}

cpu_ticks() {  # user + system clock ticks of a process, all its threads (0 once gone)
  awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0
}
