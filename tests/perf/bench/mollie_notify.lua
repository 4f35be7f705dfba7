-- mollie_notify.lua - wrk script: POSTs Mollie's notification (a form post
-- id=tr_<TAG><thread>x<counter>) with a new payment id per request, so
-- every request queues a new row in table notifications. Prints one result
-- line in done() (see common.lua for the arguments and the line).
--   wrk -t2 -c32 -d6s --latency --timeout 10s -s mollie_notify.lua URL -- TAG STOP_AT_MS

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local bench = dofile(dir .. "common.lua")

local headers = { ["Content-Type"] = "application/x-www-form-urlencoded" }
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
	-- Mollie's ids are tr_ and letters or digits only.
	local id = "tr_" .. tag:gsub("[^%w]", "") .. thread_id .. "x" .. counter
	return wrk.format("POST", nil, headers, "id=" .. id)
end
