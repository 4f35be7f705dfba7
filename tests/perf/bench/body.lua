-- body.lua - wrk script: POSTs a Shopify-like paid order of about KB
-- kilobytes (many line items), a new order id per request, unsigned or
-- signed as Shopify signs (X-Shopify-Hmac-Sha256: base64 HMAC-SHA256 of the
-- body, computed here with OpenSSL's libcrypto, which wrk is linked with).
-- The body also carries the standard profile's fields (transaction_id,
-- amount, currency), so the same order goes to a standard pool unsigned and
-- to a shopify pool signed. The order is built once per thread at start;
-- each request only puts its id in front of it (and signs it). Prints one
-- result line in done() (see common.lua).
--   wrk -t2 -c8 -d5s --latency -s body.lua URL -- TAG STOP_AT_MS KB [SECRET]

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local bench = dofile(dir .. "common.lua")
local ffi = require("ffi")

ffi.cdef [[
typedef struct evp_md_st EVP_MD;
const EVP_MD *EVP_sha256(void);
unsigned char *HMAC(const EVP_MD *evp_md, const void *key, int key_len,
                    const unsigned char *d, size_t n, unsigned char *md,
                    unsigned int *md_len);
int EVP_EncodeBlock(unsigned char *t, const unsigned char *f, int n);
]]
local crypto = ffi.load("crypto")
local md = ffi.new("unsigned char[64]")
local md_len = ffi.new("unsigned int[1]")
local b64 = ffi.new("unsigned char[128]")

local function hmac_b64(key, data)
	crypto.HMAC(crypto.EVP_sha256(), key, #key, data, #data, md, md_len)
	local n = crypto.EVP_EncodeBlock(b64, md, md_len[0])
	return ffi.string(b64, n)
end

local secret, tail = nil, nil
local counter = 0

function setup(thread) bench.setup(thread) end
function done(summary, latency) bench.done(summary, latency) end
function response(status) bench.response(status) end

-- The order after its id: line items until it reaches KB kilobytes; the
-- items differ (sku, title, price), as a real order's would.
local words = { "classic", "organic", "cotton", "wireless", "leather",
	"ceramic", "premium", "compact", "vintage", "bamboo", "steel", "wool",
	"mug", "shirt", "lamp", "backpack", "speaker", "candle", "notebook" }
local function order_tail(kb)
	local target = kb * 1024
	local parts = { ',"amount":4999,"currency":"USD","financial_status":"paid",' ..
		'"total_price":"49.99","customer":{"email":"buyer@example.com",' ..
		'"first_name":"Ava","last_name":"Smith"},"line_items":[' }
	local size, i = #parts[1], 0
	math.randomseed(42 + (thread_id or 0))
	while size < target - 200 do
		i = i + 1
		local item = string.format(
			'%s{"id":%d,"sku":"SKU-%06d","title":"%s %s %s","quantity":%d,' ..
			'"price":"%d.%02d","vendor":"payhook bench","requires_shipping":true}',
			i > 1 and "," or "", 1000000 + i, math.random(0, 999999),
			words[math.random(#words)], words[math.random(#words)],
			words[math.random(#words)], math.random(1, 5),
			math.random(1, 300), math.random(0, 99))
		parts[#parts + 1] = item
		size = size + #item
	end
	parts[#parts + 1] = "]}"
	return table.concat(parts)
end

function init(args)
	bench.init(args)
	tail = order_tail(tonumber(args[3] or "1"))
	secret = args[4]
end

local headers = { ["Content-Type"] = "application/json",
	["X-Shopify-Topic"] = "orders/paid" }

function request()
	if bench.draining() then return "" end
	bench.sending()
	counter = counter + 1
	-- A Shopify order id is an integer: thread, then counter, after the
	-- run's numeric tag.
	local id = string.format("%s%d%09d", tag, thread_id, counter)
	local body = '{"id":' .. id .. ',"transaction_id":"' .. id .. '"' .. tail
	if secret then
		headers["X-Shopify-Hmac-Sha256"] = hmac_b64(secret, body)
	end
	return wrk.format("POST", nil, headers, body)
end
