-- dup_storm.lua - wrk script: a storm of redeliveries, every request one of
-- 10 transaction ids TAG-0 .. TAG-9 picked at random, same amount and
-- currency. Exactly 10 rows may result; the answers are processed,
-- duplicate (200) or in_progress (409), never a 5xx. Prints one result line
-- in done() (see common.lua).
--   wrk -t2 -c32 -d6s --latency --timeout 10s -s dup_storm.lua URL -- TAG STOP_AT_MS

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local bench = dofile(dir .. "common.lua")

local headers = { ["Content-Type"] = "application/json" }

function setup(thread) bench.setup(thread) end
function done(summary, latency) bench.done(summary, latency) end
function response(status) bench.response(status) end

function init(args)
	bench.init(args)
	math.randomseed(thread_id * 7919 + os.time())
end

function request()
	if bench.draining() then return "" end
	bench.sending()
	local id = tag .. "-" .. math.random(0, 9)
	return wrk.format("POST", nil, headers, bench.body(id))
end
