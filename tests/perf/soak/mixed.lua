-- mixed.lua - wrk script of the soak test: a mix of new transactions (70 %),
-- redeliveries of ones this thread sent before (20 %, same body: duplicate,
-- or in_progress while the first is still in flight) and bad bodies (10 %,
-- amount as a string: 400). Prints the result line of ../bench/common.lua
-- plus "soak new=N redelivered=N bad=N" counted over all threads.
--   wrk -t2 -c32 -d20s --timeout 10s -s mixed.lua URL -- TAG STOP_AT_MS

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local bench = dofile(dir .. "../bench/common.lua")

local headers = { ["Content-Type"] = "application/json" }
local counter = 0
local threads = {}

-- Globals read by done() through thread:get.
new_sent, redelivered, bad_sent = 0, 0, 0

function setup(thread)
	bench.setup(thread)
	table.insert(threads, thread)
end

function init(args)
	bench.init(args)
	math.randomseed(thread_id * 7919 + os.time())
end

function response(status) bench.response(status) end

function done(summary, latency)
	bench.done(summary, latency)
	local n, r, b = 0, 0, 0
	for _, t in ipairs(threads) do
		n = n + (t:get("new_sent") or 0)
		r = r + (t:get("redelivered") or 0)
		b = b + (t:get("bad_sent") or 0)
	end
	io.write(string.format("soak new=%d redelivered=%d bad=%d\n", n, r, b))
end

function request()
	if bench.draining() then return "" end
	if not bench.sending() then
		return wrk.format("POST", nil, headers, bench.body(tag .. "-check"))
	end
	local pick = math.random(100)
	if pick <= 10 then
		bad_sent = bad_sent + 1
		return wrk.format("POST", nil, headers,
			'{"transaction_id":"' .. tag .. '-bad","amount":"12",' ..
			'"currency":"EUR"}')
	end
	if pick <= 30 and counter > 0 then
		redelivered = redelivered + 1
		local id = tag .. "-" .. thread_id .. "-" .. math.random(counter)
		return wrk.format("POST", nil, headers, bench.body(id))
	end
	counter = counter + 1
	new_sent = new_sent + 1
	local id = tag .. "-" .. thread_id .. "-" .. counter
	return wrk.format("POST", nil, headers, bench.body(id))
end
