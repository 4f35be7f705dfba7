-- common.lua - shared by the wrk scripts of tests/perf/bench (new_id.lua,
-- dup_storm.lua, signed.lua): the body, per-thread status counts, a drain
-- before wrk stops, and one machine-readable line printed by done().
--
-- Script arguments (after wrk's "--"): TAG STOP_AT_MS [EXTRA...]
--   TAG         run tag: every transaction id starts with "TAG-"
--   STOP_AT_MS  wall-clock time (Unix ms) after which no new request is sent,
--               so that every request sent is answered before wrk stops (its
--               -d must end at least one worst-case latency later): rows in
--               payments can then be compared with the 200s exactly
--
-- The line: "wrk tag=... rps=... p50_ms=... p99_ms=... p999_ms=... max_ms=...
-- requests=... unanswered=... non2xx=... statuses=200:N,409:M
-- errors=connect/read/write/timeout exhausted=N". rps counts answers between
-- the first request and the last answer (the drain excluded); the latency
-- percentiles are wrk's own (corrected for coordinated omission, as wrk does).

local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
int clock_gettime(int clk_id, bench_timespec *tp);
]]

local M = {}
local ts = ffi.new("bench_timespec")
local CLOCK_REALTIME = 0

function M.now_ms()
	ffi.C.clock_gettime(CLOCK_REALTIME, ts)
	return tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1e6
end

-- The body raw_limit.c and sign_pool.c use too: keep the three in step.
local BODY = '{"type":"payment.succeeded","transaction_id":"%s",' ..
	'"amount":1999,"currency":"EUR","created_at":"2024-01-01T00:00:00Z",' ..
	'"data":{"method":"card","card":{"brand":"visa","last4":"4242"},' ..
	'"customer":"cus_0001","description":"benchmark order"}}'

function M.body(id)
	return string.format(BODY, id)
end

-- ---- main state: thread bookkeeping and the summary --------------------

local threads = {}

function M.setup(thread)
	table.insert(threads, thread)
	thread:set("thread_id", #threads)
end

local function fmt(x)
	return string.format("%.3f", x)
end

function M.done(summary, latency)
	local statuses, sent, answered, exhausted = {}, 0, 0, 0
	local first, last = math.huge, 0
	local tag = "?"
	for _, t in ipairs(threads) do
		for status, n in pairs(t:get("statuses") or {}) do
			statuses[status] = (statuses[status] or 0) + n
		end
		sent = sent + (t:get("sent") or 0)
		answered = answered + (t:get("answered") or 0)
		exhausted = exhausted + (t:get("exhausted") or 0)
		local f, l = t:get("first_ms"), t:get("last_ms")
		if f and f < first then first = f end
		if l and l > last then last = l end
		tag = t:get("tag") or tag
	end
	local keys, parts, non2xx = {}, {}, 0
	for status in pairs(statuses) do table.insert(keys, status) end
	table.sort(keys)
	for _, status in ipairs(keys) do
		table.insert(parts, status .. ":" .. statuses[status])
		if status < 200 or status > 299 then
			non2xx = non2xx + statuses[status]
		end
	end
	local rps = 0
	if last > first then rps = answered * 1000 / (last - first) end
	local e = summary.errors
	io.write(string.format(
		"wrk tag=%s rps=%.1f p50_ms=%s p99_ms=%s p999_ms=%s max_ms=%s " ..
		"requests=%d unanswered=%d non2xx=%d statuses=%s " ..
		"errors=%d/%d/%d/%d exhausted=%d\n",
		tag, rps, fmt(latency:percentile(50) / 1000),
		fmt(latency:percentile(99) / 1000),
		fmt(latency:percentile(99.9) / 1000), fmt(latency.max / 1000),
		answered, sent - answered, non2xx,
		#parts > 0 and table.concat(parts, ",") or "none",
		e.connect, e.read, e.write, e.timeout, exhausted))
end

-- ---- thread states -------------------------------------------------------

-- Globals read by M.done through thread:get.
statuses, sent, answered, exhausted = {}, 0, 0, 0
first_ms, last_ms, tag = nil, nil, nil

local stop_at_ms = math.huge
-- wrk calls request() once in thread 1 to check the request parses, before
-- the run: that call is not a request sent.
local checked = false

function M.init(args)
	tag = args[1] or "bench"
	stop_at_ms = tonumber(args[2] or "") or math.huge
	checked = thread_id ~= 1
end

-- True once no new request may be sent.
function M.draining()
	return M.now_ms() >= stop_at_ms
end

-- Counts the request about to be sent; false for wrk's parse check (see
-- "checked"), which is not sent.
function M.sending()
	if not checked then
		checked = true
		return false
	end
	sent = sent + 1
	if first_ms == nil then first_ms = M.now_ms() end
	return true
end

function M.response(status)
	statuses[status] = (statuses[status] or 0) + 1
	answered = answered + 1
	last_ms = M.now_ms()
end

return M
