-- new_id.lua - wrk script: POSTs a webhook with a new transaction id per
-- request, TAG-<thread>-<counter>, so every request takes payhook's full
-- path (lock, INSERT, COMMIT, release). Prints one result line in done()
-- (see common.lua for the arguments and the line).
--   wrk -t2 -c32 -d6s --latency --timeout 10s -s new_id.lua URL -- TAG STOP_AT_MS

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local bench = dofile(dir .. "common.lua")

local headers = { ["Content-Type"] = "application/json" }
local counter = 0

function setup(thread) bench.setup(thread) end
function init(args) bench.init(args) end
function done(summary, latency) bench.done(summary, latency) end
function response(status) bench.response(status) end

function request()
	-- An empty request sends nothing: the connection goes quiet.
	if bench.draining() then return "" end
	bench.sending()
	counter = counter + 1
	local id = tag .. "-" .. thread_id .. "-" .. counter
	return wrk.format("POST", nil, headers, bench.body(id))
end
