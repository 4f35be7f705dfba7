-- ignored.lua - wrk script: POSTs one signed Stripe event that the stripe
-- profile does not record (answered 200 ignored, or kept in the inbox with
-- inbox_days), the same body each time, to the pool's path + "/stripe".
-- Prints one result line in done() (see common.lua).
--   wrk ... -s ignored.lua URL -- TAG STOP_AT_MS SIGNATURE BODYFILE
-- SIGNATURE is the Stripe-Signature value for the body in BODYFILE (signed
-- within stripe_tolerance_s of the run).

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local bench = dofile(dir .. "common.lua")

local req

function setup(thread) bench.setup(thread) end
function init(args)
	bench.init(args)
	local f = assert(io.open(args[4], "rb"))
	local body = f:read("*a")
	f:close()
	req = wrk.format("POST", wrk.path .. "/stripe", {
		["Content-Type"] = "application/json",
		["Stripe-Signature"] = args[3],
	}, body)
end
function done(summary, latency) bench.done(summary, latency) end
function response(status) bench.response(status) end

function request()
	if bench.draining() then return "" end
	bench.sending()
	return req
end
