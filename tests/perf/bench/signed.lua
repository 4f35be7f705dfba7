-- signed.lua - wrk script: POSTs pre-signed webhooks (Standard Webhooks
-- headers) from a pool written by sign_pool, each entry once: thread k of T
-- takes entries k, k+T, k+2T, ... When its share runs out a thread stops
-- sending and the result line says exhausted=N (size the pool above what a
-- run can send). Prints one result line in done() (see common.lua).
--   wrk -t2 -c32 -d6s --latency --timeout 10s -s signed.lua URL -- TAG STOP_AT_MS POOL.lua THREADS
-- TAG must be the tag given to sign_pool (it only labels the result line).

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local bench = dofile(dir .. "common.lua")

local requests, next_index = {}, 1

function setup(thread) bench.setup(thread) end
function done(summary, latency) bench.done(summary, latency) end
function response(status) bench.response(status) end

function init(args)
	bench.init(args)
	local pool = dofile(args[3])
	local stride = tonumber(args[4] or "1")
	-- Formatted once here, so the run pays only for sending them.
	for i = thread_id, #pool, stride do
		local e = pool[i]
		requests[#requests + 1] = wrk.format("POST", nil, {
			["Content-Type"] = "application/json",
			["webhook-id"] = e[1],
			["webhook-timestamp"] = e[2],
			["webhook-signature"] = e[3],
		}, e[4])
	end
	pool = nil
	collectgarbage()
end

function request()
	if bench.draining() then return "" end
	local r = requests[next_index]
	if r == nil then
		exhausted = 1
		return ""
	end
	-- wrk's parse check does not use up an entry.
	if bench.sending() then next_index = next_index + 1 end
	return r
end
