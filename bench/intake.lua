-- wrk script for bench/intake.sh: single-job intake, POST /v1/queues/intake/jobs.
-- The submit token comes from SLUICE_BENCH_TOKEN. Only 202 counts as a success:
-- every other status is counted per code and printed by done(), never hidden.
-- The request is static (no request() function), so wrk builds it once per thread.
local token = os.getenv("SLUICE_BENCH_TOKEN")
if not token or token == "" then
  error("SLUICE_BENCH_TOKEN is not set")
end

wrk.method = "POST"
wrk.path = "/v1/queues/intake/jobs"
wrk.headers["Authorization"] = "Bearer " .. token
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"payload":{"kind":"bench","n":1}}'

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  accepted = 0   -- 202s seen by this thread
  rejected = 0   -- any other status
  by_status = {} -- status -> count, for the non-202s
end

function response(status, headers, body)
  if status == 202 then
    accepted = accepted + 1
  else
    rejected = rejected + 1
    by_status[status] = (by_status[status] or 0) + 1
  end
end

function done(summary, latency, requests)
  local ok, bad, codes = 0, 0, {}
  for _, t in ipairs(threads) do
    ok = ok + t:get("accepted")
    bad = bad + t:get("rejected")
    for code, n in pairs(t:get("by_status")) do
      codes[code] = (codes[code] or 0) + n
    end
  end
  local list = {}
  for code, n in pairs(codes) do
    table.insert(list, tostring(code) .. "=" .. tostring(n))
  end
  table.sort(list)
  local secs = summary.duration / 1e6
  local e = summary.errors
  io.write(string.format("intake-202: %d\n", ok))
  io.write(string.format("intake-non202: %d\n", bad))
  io.write(string.format("intake-non202-statuses: %s\n", #list > 0 and table.concat(list, ",") or "none"))
  io.write(string.format("intake-seconds: %.3f\n", secs))
  io.write(string.format("intake-202-per-s: %.1f\n", ok / secs))
  io.write(string.format("intake-socket-errors: connect=%d read=%d write=%d timeout=%d\n",
                         e.connect, e.read, e.write, e.timeout))
  io.write(string.format("intake-latency-us: p50=%d p99=%d max=%d\n",
                         latency:percentile(50), latency:percentile(99), latency.max))
end
