<?php
// webhook.php - the PHP-FPM peer of payhook's benchmark (tests/perf/bench/bench.sh):
// the webhook receiver most merchants run today, the same lock-and-unique-key
// recipe as payhook in PHP 8.2 under PHP-FPM:
//
//   SET lock:webhook:tx:<id> <random token> NX PX 30000    (phpredis pconnect)
//   INSERT INTO payments (...) VALUES ('standard', ?, ?, ?, ?)
//                        (mysqli persistent, prepared, autocommit)
//   EVAL <ownership-checking release script>                (phpredis)
//
// Answers, with a JSON body {"result": ..., "transaction_id": ..., "reason": ...}:
//   200 processed     the row was inserted
//   200 duplicate     ER_DUP_ENTRY (1062) and the row has the same amount and
//                     currency
//   409 conflict      ER_DUP_ENTRY and the row differs (payhook answers 422)
//   409 in_progress   the lock is held by another delivery (Retry-After)
//   400 invalid       not strict JSON, or transaction_id (1-128 visible ASCII
//                     bytes), amount (integer >= 1) or currency (3 letters)
//                     wrong, as payhook's standard profile checks them
//   405, 411, 413, 415 method, length, size (64 KiB), content type
//   503 unavailable   Redis or MySQL failed (Retry-After)
// The lock is released whatever the INSERT did; a failed release is logged
// and the answer stands (the lock expires by itself).
//
// The backends come from the same environment the benchmark gives payhook
// (PAYHOOK_MYSQL_*, PAYHOOK_REDIS_*), passed by env[...] lines of the pool
// (tests/perf/bench/php/php-fpm.conf).

declare(strict_types=1);

const LOCK_TTL_MS = 30000;
const MAX_BODY = 65536;
// The same script as payhook's lib/lock.c: 1 deleted ours, 0 gone, -1
// someone else's.
const RELEASE_SCRIPT = "local v = redis.call('GET', KEYS[1])\n"
	. "if v == ARGV[1] then return redis.call('DEL', KEYS[1]) end\n"
	. "if v then return -1 end\n"
	. "return 0\n";
const INSERT_SQL = "INSERT INTO payments (provider, transaction_id, amount, currency, payload)"
	. " VALUES ('standard', ?, ?, ?, ?)";
const FIND_SQL = "SELECT amount, currency FROM payments"
	. " WHERE provider = 'standard' AND transaction_id = ?";
const ER_DUP_ENTRY = 1062;

function env(string $name, ?string $default = null): ?string
{
	$v = getenv($name);
	return $v === false || $v === '' ? $default : $v;
}

function answer(int $status, string $result, ?string $id = null, ?string $reason = null): void
{
	http_response_code($status);
	header('Content-Type: application/json');
	header('Cache-Control: no-store');
	if ($status === 503 || $result === 'in_progress') {
		header('Retry-After: 5');
	}
	$body = ['result' => $result];
	if ($id !== null) {
		$body['transaction_id'] = $id;
	}
	if ($reason !== null) {
		$body['reason'] = $reason;
	}
	echo json_encode($body, JSON_UNESCAPED_SLASHES | JSON_INVALID_UTF8_SUBSTITUTE), "\n";
}

function redis_connect(): Redis
{
	$redis = new Redis();
	$socket = env('PAYHOOK_REDIS_SOCKET');
	if ($socket !== null) {
		$redis->pconnect($socket, 0, 0.5);
	} else {
		$redis->pconnect(env('PAYHOOK_REDIS_HOST', '127.0.0.1'),
			(int)env('PAYHOOK_REDIS_PORT', '6379'), 0.5);
	}
	$redis->setOption(Redis::OPT_READ_TIMEOUT, 0.5);
	$password = env('PAYHOOK_REDIS_PASSWORD');
	if ($password !== null) {
		$redis->auth($password);
	}
	return $redis;
}

function mysql_connect_p(): mysqli
{
	mysqli_report(MYSQLI_REPORT_ERROR | MYSQLI_REPORT_STRICT);
	$db = mysqli_init();
	$db->options(MYSQLI_OPT_CONNECT_TIMEOUT, 2);
	$db->options(MYSQLI_OPT_READ_TIMEOUT, 2);
	$db->options(MYSQLI_SET_CHARSET_NAME, 'utf8mb4');
	$socket = env('PAYHOOK_MYSQL_SOCKET');
	// "p:": a persistent connection, kept by the FPM child between requests.
	$db->real_connect('p:' . ($socket !== null ? 'localhost' : env('PAYHOOK_MYSQL_HOST', '127.0.0.1')),
		env('PAYHOOK_MYSQL_USER', 'payhook'), env('PAYHOOK_MYSQL_PASSWORD', ''),
		env('PAYHOOK_MYSQL_DATABASE', 'payhook'),
		(int)env('PAYHOOK_MYSQL_PORT', '3306'), $socket);
	return $db;
}

// What is already recorded for $id: 200 duplicate or 409 conflict.
function answer_existing(mysqli $db, string $id, int $amount, string $currency): void
{
	$find = $db->prepare(FIND_SQL);
	$find->bind_param('s', $id);
	$find->execute();
	$row = $find->get_result()->fetch_assoc();
	$find->close();
	if ($row === null) {
		answer(503, 'unavailable', $id, 'duplicate key but no row: retry');
	} elseif ((int)$row['amount'] === $amount && $row['currency'] === $currency) {
		answer(200, 'duplicate', $id);
	} else {
		answer(409, 'conflict', $id,
			'transaction_id already recorded with a different amount or currency');
	}
}

function handle(): void
{
	if (($_SERVER['REQUEST_METHOD'] ?? '') !== 'POST') {
		header('Allow: POST');
		answer(405, 'method_not_allowed');
		return;
	}
	$type = strtolower(trim(explode(';', $_SERVER['CONTENT_TYPE'] ?? '', 2)[0]));
	if ($type !== 'application/json') {
		answer(415, 'unsupported_media_type');
		return;
	}
	if (!isset($_SERVER['CONTENT_LENGTH']) || $_SERVER['CONTENT_LENGTH'] === '') {
		answer(411, 'length_required');
		return;
	}
	if ((int)$_SERVER['CONTENT_LENGTH'] > MAX_BODY) {
		answer(413, 'too_large');
		return;
	}
	$raw = file_get_contents('php://input', false, null, 0, MAX_BODY + 1);
	if ($raw === false || strlen($raw) > MAX_BODY) {
		answer(413, 'too_large');
		return;
	}

	// Strict JSON: an object, no trailing garbage, big integers kept as
	// strings so that they fail the integer check instead of rounding.
	try {
		$data = json_decode($raw, true, 64, JSON_THROW_ON_ERROR | JSON_BIGINT_AS_STRING);
	} catch (JsonException $e) {
		answer(400, 'invalid', null, 'body: not valid JSON');
		return;
	}
	if (!is_array($data) || ($data !== [] && array_is_list($data))) {
		answer(400, 'invalid', null, 'body: must be a JSON object');
		return;
	}
	$id = $data['transaction_id'] ?? null;
	if (!is_string($id) || preg_match('/\A[\x21-\x7e]{1,128}\z/', $id) !== 1) {
		answer(400, 'invalid', null, 'transaction_id: must be 1-128 visible ASCII bytes');
		return;
	}
	$amount = $data['amount'] ?? null;
	if (!is_int($amount) || $amount < 1) {
		answer(400, 'invalid', $id, 'amount: must be 1-9223372036854775807');
		return;
	}
	$currency = $data['currency'] ?? null;
	if (!is_string($currency) || preg_match('/\A[A-Za-z]{3}\z/', $currency) !== 1) {
		answer(400, 'invalid', $id, 'currency: must be 3 ASCII letters');
		return;
	}
	$currency = strtoupper($currency);

	$key = 'lock:webhook:tx:' . $id;
	$token = bin2hex(random_bytes(16));
	try {
		$redis = redis_connect();
		$locked = $redis->set($key, $token, ['nx', 'px' => LOCK_TTL_MS]);
	} catch (RedisException $e) {
		error_log('webhook: redis: ' . $e->getMessage());
		answer(503, 'unavailable', $id, 'lock service unavailable: retry');
		return;
	}
	if ($locked !== true) {
		answer(409, 'in_progress', $id,
			'another delivery of this transaction is being processed: retry');
		return;
	}

	try {
		$db = mysql_connect_p();
		$insert = $db->prepare(INSERT_SQL);
		$insert->bind_param('siss', $id, $amount, $currency, $raw);
		try {
			$insert->execute();
			answer(200, 'processed', $id);
		} catch (mysqli_sql_exception $e) {
			if ($e->getCode() !== ER_DUP_ENTRY) {
				throw $e;
			}
			answer_existing($db, $id, $amount, $currency);
		} finally {
			$insert->close();
		}
	} catch (mysqli_sql_exception $e) {
		error_log('webhook: mysql: ' . $e->getCode() . ' ' . $e->getMessage());
		answer(503, 'unavailable', $id, 'database unavailable: retry');
	} finally {
		try {
			if ($redis->eval(RELEASE_SCRIPT, [$key, $token], 1) !== 1) {
				error_log('webhook: lost lease on ' . $key);
			}
		} catch (RedisException $e) {
			error_log('webhook: lock release failed (' . $e->getMessage()
				. '); it expires by itself');
		}
	}
}

handle();
