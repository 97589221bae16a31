# shellcheck shell=bash
# Shell helpers the benchmark scripts share (sourced by bench/intake.sh, bench/drivers.sh
# and bench/cluster.sh, from the repository's root): a run's tools, outputs and build,
# stopping the processes a run started, their CPU time, and a private PostgreSQL
# cluster. The caller keeps the pids it started in the array PIDS and the data
# directories to remove at exit in DATA_DIRS (kept when KEEP_DATA=1).

# ---- a run's tools, outputs and build ---------------------------------------------------
# install_missing <command>[=<package>] ...: installs with apt-get (through sudo unless
# root) the package of each command that is not on PATH (by default the command's name).
install_missing() {
  local spec sudo="" need=()
  for spec in "$@"; do
    command -v "${spec%%=*}" >/dev/null || need+=("${spec#*=}")
  done
  [ ${#need[@]} -gt 0 ] || return 0
  echo "==> installing: ${need[*]}"
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${need[@]}" >/dev/null
}

# bench_outputs <name>: sets OUT (var/bench, made if missing), STAMP and PREFIX, the
# start of this run's raw output files (var/bench/<name>-<stamp>).
bench_outputs() {
  OUT=var/bench
  mkdir -p "$OUT"
  STAMP="$(date +%Y%m%d-%H%M%S)"
  PREFIX="$OUT/$1-$STAMP"
}

# tree_rev [pathspec ...]: HEAD's short hash, with " + uncommitted changes" when the
# working tree differs from it in the paths given (git status pathspecs).
tree_rev() {
  local rev
  rev="$(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  [ -z "$(git status --porcelain -- "$@" 2>/dev/null)" ] || rev="$rev + uncommitted changes"
  echo "$rev"
}

# build_targets <setup.sh> <build dir> <target ...>: builds the targets with that
# scripts/setup.sh into $PREFIX-build.txt; on failure shows its tail and exits.
build_targets() {
  if ! "$@" >"$PREFIX-build.txt" 2>&1; then
    tail -n 30 "$PREFIX-build.txt" >&2
    echo "build failed (full log: $PREFIX-build.txt)" >&2
    exit 1
  fi
}

# Kills every pid in PIDS (SIGTERM, then SIGKILL 0.2 s later), for the exit trap.
kill_pids() {
  local p
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  sleep 0.2
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
}

# Removes every directory in DATA_DIRS unless KEEP_DATA=1, for the exit trap.
remove_data_dirs() {
  local d
  if [ "${KEEP_DATA:-0}" != 1 ]; then
    for d in "${DATA_DIRS[@]}"; do rm -rf "$d"; done
  fi
}

# ---- processes ----------------------------------------------------------------------------

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

ticks_us_per_job() {  # ticks_us_per_job <ticks> <jobs>: CPU microseconds per job, or "-"
  awk -v t="$1" -v n="$2" -v hz="$(getconf CLK_TCK)" \
    'BEGIN {if (n > 0) printf "%.0f", t * 1e6 / hz / n; else print "-"}'
}

# ---- a private PostgreSQL cluster (bench/drivers.sh, bench/cluster.sh) -----------------
# The caller sets PGBIN (the server's bin directory) and may set AS_PG; these helpers set
# PGDIR (the cluster's directory: data/, server.log, the socket), PGPORT and PM_PID.
PGDIR="" PGPORT="" PM_PID=""
AS_PG=()  # how server commands run: as the postgres user when we are root (NOTES.md)
[ "$(id -u)" -eq 0 ] && AS_PG=(runuser -u postgres --)

require_pg_tools() {  # exits unless PGBIN has initdb, pg_ctl and psql
  local tool
  for tool in initdb pg_ctl psql; do
    [ -x "$PGBIN/$tool" ] || { echo "$PGBIN/$tool is missing: run scripts/setup.sh (postgresql)" >&2; exit 1; }
  done
}

psql_do() {  # psql_do <database> <sql>: prints the result, unaligned, tuples only
  "$PGBIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PGPORT" -U postgres -d "$1" -c "$2"
}

# start_postgres <parent dir> [server option ...]: initdb into a fresh directory under
# <parent dir> (owned by the postgres user when we are root), then starts it on a free
# loopback port with its own socket directory; the options are passed to postgres as
# they are (e.g. "-c max_connections=200"). Otherwise default settings: fsync,
# synchronous_commit and full_page_writes on.
start_postgres() {
  local parent="$1" port opts
  shift
  PGDIR="$(mktemp -d "$parent/pg.XXXXXX")"
  [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$PGDIR"
  chmod 700 "$PGDIR"
  if ! "${AS_PG[@]}" "$PGBIN/initdb" -D "$PGDIR/data" -A trust -U postgres >"$PGDIR/initdb.log" 2>&1; then
    cat "$PGDIR/initdb.log" >&2
    echo "initdb failed" >&2
    return 1
  fi
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    port=$((20000 + RANDOM % 40000))
    ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && continue
    opts="-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$PGDIR $*"
    # -w: pg_ctl returns once the server accepts connections, or when it exits (port taken).
    if "${AS_PG[@]}" "$PGBIN/pg_ctl" start -w -t 60 -D "$PGDIR/data" -l "$PGDIR/server.log" \
      -o "$opts" >/dev/null 2>&1; then
      PGPORT="$port"
      break
    fi
  done
  [ -n "$PGPORT" ] || { tail -n 20 "$PGDIR/server.log" >&2; echo "PostgreSQL did not start" >&2; return 1; }
  PM_PID="$(head -n 1 "$PGDIR/data/postmaster.pid")"
}

# stop_postgres [keep]: stops the cluster (fast, then immediate); removes its directory
# unless "keep" is given. Safe to call when none was started.
stop_postgres() {
  [ -n "$PGDIR" ] || return 0
  if [ -f "$PGDIR/data/postmaster.pid" ]; then
    "${AS_PG[@]}" "$PGBIN/pg_ctl" stop -D "$PGDIR/data" -m fast -w -t 30 >/dev/null 2>&1 ||
      "${AS_PG[@]}" "$PGBIN/pg_ctl" stop -D "$PGDIR/data" -m immediate -w >/dev/null 2>&1 || true
  fi
  [ "${1:-}" = keep ] || rm -rf "$PGDIR"
}

# new_database [extension ...]: creates a fresh database (bench_1, bench_2, ...) in the
# cluster, with those extensions; sets PG_DB (its name) and PG_URI.
NEXT_DB=0
# shellcheck disable=SC2120  # the extensions are optional
new_database() {
  local ext
  NEXT_DB=$((NEXT_DB + 1))
  PG_DB="bench_$NEXT_DB"
  psql_do postgres "CREATE DATABASE $PG_DB TEMPLATE template0" >/dev/null
  for ext in "$@"; do psql_do "$PG_DB" "CREATE EXTENSION $ext" >/dev/null; done
  # shellcheck disable=SC2034  # for the caller
  PG_URI="postgres://postgres@127.0.0.1:$PGPORT/$PG_DB"
}

# CPU clock ticks the cluster has spent: the postmaster with the children it reaped
# (cutime + cstime), and its live children. A backend that exits between two samples
# moves from the second sum into the first, so a difference of samples is what the
# cluster spent in between. (The process names have no spaces: fields count plainly.)
pg_ticks() {
  local t c
  t="$(awk '{print $14 + $15 + $16 + $17}' "/proc/$PM_PID/stat" 2>/dev/null || echo 0)"
  for c in $(pgrep -P "$PM_PID" 2>/dev/null || true); do
    t=$((t + $(awk '{print $14 + $15}' "/proc/$c/stat" 2>/dev/null || echo 0)))
  done
  echo "$t"
}

wal_syncs() { psql_do postgres "SELECT wal_sync FROM pg_stat_wal"; }
xacts() {  # transactions committed and rolled back in database $1 (read once its backends left)
  psql_do postgres "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = '$1'"
}

# start_sluiced <db> <file prefix> [flag ...]: one sluiced ($SLUICED, admin token $ADMIN) on
# a free loopback port, its log in <prefix>.log, added to PIDS; awaits /healthz. Sets
# S_PID and S_URL.
start_sluiced() {
  local db="$1" pre="$2" port=""
  shift 2
  SLUICE_ADMIN_TOKEN="$ADMIN" "$SLUICED" --listen 127.0.0.1:0 --db "$db" --port-file "$pre.port" \
    "$@" >"$pre.log" 2>&1 &
  S_PID=$!
  PIDS+=("$S_PID")
  for _ in $(seq 300); do
    [ -s "$pre.port" ] && port="$(cat "$pre.port")" && [ -n "$port" ] && break
    kill -0 "$S_PID" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "sluiced did not start:" >&2; tail -n 20 "$pre.log" >&2; return 1; }
  S_URL="http://127.0.0.1:$port"
  for _ in $(seq 200); do
    curl -fsS --max-time 1 "$S_URL/healthz" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "sluiced on $S_URL is not healthy" >&2
  return 1
}

# npm_peer <dir> <package> <version> [more package@version ...]: installs <package>@<version>
# (and the others) into <dir> with npm, unless that version is already there.
npm_peer() {
  local dir="$1" pkg="$2" version="$3"
  shift 3
  [ "$(cd "$dir" 2>/dev/null && node -p "require('$pkg/package.json').version" 2>/dev/null)" = "$version" ] &&
    return 0
  echo "==> installing $pkg $version into ${dir#"$ROOT/"} (npm)"
  mkdir -p "$dir"
  (cd "$dir" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm install --no-audit --no-fund "$pkg@$version" "$@" >/dev/null)
}
