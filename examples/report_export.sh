#!/bin/sh
# The report-export handler as a command for sluice-worker (docs/workers.md):
#   SLUICE_TOKEN=... sluice-worker --server URL --queue report-export -- examples/report_export.sh
# Reads the payload {"report": name, "columns": [...], "rows": [[...], ...]} on stdin and
# writes it as CSV to $REPORT_DIR/<tenant>/<report>-<job id>.csv (the same file the C++
# sluice-report-worker writes), taking $REPORT_MS_PER_ROW ms per row (the simulated cost
# of a real export). Prints {"path", "rows", "bytes"}: the job's result.
# Exit 65 (EX_DATAERR) for a payload it can never export: no retry. Exit 75 (EX_TEMPFAIL)
# with {"retry_in_ms": 5000} when the output directory cannot be written: retry later.
set -eu
out_dir="${REPORT_DIR:-var/reports}"
ms_per_row="${REPORT_MS_PER_ROW:-0}"
payload=$(cat)

if ! printf '%s' "$payload" | jq -e '
    (.columns | type == "array") and (.rows | type == "array") and
    all(.columns, .rows[]; type == "array" and all(.[]; type != "array" and type != "object"))
  ' >/dev/null 2>&1; then
  echo "payload needs 'columns' and 'rows' arrays of plain values" >&2
  exit 65
fi

safe() { printf '%s' "$1" | tr -c 'A-Za-z0-9_-' '_'; }
report=$(printf '%s' "$payload" | jq -r '.report // "report"')
dir="$out_dir/$(safe "$SLUICE_TENANT")"
file="$dir/$(safe "$report")-$SLUICE_JOB_ID.csv"
if ! mkdir -p "$dir" 2>/dev/null || ! [ -w "$dir" ]; then
  echo '{"retry_in_ms": 5000}'
  echo "cannot write to $dir" >&2
  exit 75
fi

tmp="$file.tmp"
printf '%s' "$payload" | jq -r '.columns, .rows[] | @csv' >"$tmp"
rows=$(printf '%s' "$payload" | jq '.rows | length')
# The expensive part of a real export, proportional to its size. sluice-worker sends
# SIGTERM to the whole process group if the lease is lost; sleep dies with us.
sleep "$(awk -v r="$rows" -v m="$ms_per_row" 'BEGIN { printf "%.3f", r * m / 1000 }')"
mv "$tmp" "$file" # a retry overwrites, never duplicates
bytes=$(wc -c <"$file")
jq -n --arg path "$file" --argjson rows "$rows" --argjson bytes "$bytes" \
  '{path: $path, rows: $rows, bytes: $bytes}'
