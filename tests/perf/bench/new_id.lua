-- new_id.lua - wrk script: POSTs a webhook with a new transaction id per
-- request, TAG-<thread>-<counter>, so every request takes payhook's full
-- path (lock, INSERT, COMMIT, release). Prints one result line in done()
-- (see common.lua for the arguments and the line). With a third argument
-- "random" the id starts with 12 random characters (RANDOM-TAG-<thread>-
-- <counter>), so that each INSERT lands at a random place in the unique key
-- as real providers' ids do, not at its end (count such rows by id range).
--   wrk -t2 -c32 -d6s --latency --timeout 10s -s new_id.lua URL -- TAG STOP_AT_MS [random]

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local bench = dofile(dir .. "common.lua")

local headers = { ["Content-Type"] = "application/json" }
local counter = 0
local random = false
local ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

local function random_prefix()
	local t = {}
	for i = 1, 12 do
		local k = math.random(#ALNUM)
		t[i] = ALNUM:sub(k, k)
	end
	return table.concat(t) .. "-"
end

function setup(thread) bench.setup(thread) end
function init(args)
	bench.init(args)
	random = args[3] == "random"
	math.randomseed(math.floor(bench.now_ms()) + thread_id)
end
function done(summary, latency) bench.done(summary, latency) end
function response(status) bench.response(status) end

function request()
	-- An empty request sends nothing: the connection goes quiet.
	if bench.draining() then return "" end
	bench.sending()
	counter = counter + 1
	local id = tag .. "-" .. thread_id .. "-" .. counter
	if random then id = random_prefix() .. id end
	return wrk.format("POST", nil, headers, bench.body(id))
end
