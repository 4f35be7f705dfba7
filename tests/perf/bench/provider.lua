-- provider.lua - wrk script: POSTs pre-signed deliveries of one provider
-- from a pool written by provider_pool, each entry once, to URL (the
-- profile's path): thread k of T takes entries k, k+T, k+2T, ... When its
-- share runs out a thread stops sending and the result line says
-- exhausted=N (size the pool above what a run can send). Prints one result
-- line in done() (see common.lua).
--   wrk -t2 -c32 -d5s --latency --timeout 10s -s provider.lua URL -- TAG STOP_AT_MS POOL.lua THREADS

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
		local headers = { ["Content-Type"] = "application/json" }
		for k = 1, #e[2], 2 do headers[e[2][k]] = e[2][k + 1] end
		requests[#requests + 1] = wrk.format("POST", nil, headers, e[1])
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
