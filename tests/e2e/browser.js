// browser.js - loads one page in Debian's headless Chromium through the
// DevTools protocol (Node's own WebSocket: run with --experimental-websocket
// on Node 20; no npm package, no browser download) and prints what a person
// would see, as JSON: {status, text, columns_at_phone}.
//
//   node --experimental-websocket browser.js CHROMIUM PROFILE_DIR URL
//        SCREENSHOT.png [AUTHORIZATION]
//
// AUTHORIZATION, when given, is sent as the Authorization header. The
// screenshot is the whole page at 1000 px wide; columns_at_phone counts the
// distinct left edges of the page's sections at 390 px (1: one column).
// Chromium runs in PROFILE_DIR (the caller's mktemp directory), with
// --no-sandbox (root in a container has no user namespaces), and is
// stopped by its PID before exit, whatever happens.
'use strict';

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const [chromium, profile, url, screenshot, authorization] = process.argv.slice(2);
const TIMEOUT_MS = 30000;

const browser = spawn(chromium, [
	'--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run',
	'--disable-extensions', '--disable-background-networking',
	'--remote-debugging-address=127.0.0.1', '--remote-debugging-port=0',
	`--user-data-dir=${profile}`, '--window-size=1000,800', 'about:blank',
], { stdio: ['ignore', 'ignore', 'pipe'] });
let stderr = '';
browser.stderr.on('data', (d) => { stderr += d; });

function stop(code, message) {
	if (message) process.stderr.write(`browser.js: ${message}\n`);
	if (browser.exitCode === null) {
		try { process.kill(browser.pid, 'SIGKILL'); } catch (e) { /* gone */ }
	}
	process.exit(code);
}
const timer = setTimeout(() => stop(1, `no answer within ${TIMEOUT_MS} ms; chromium said: ${stderr.slice(-2000)}`), TIMEOUT_MS);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The port Chromium chose, from the file it writes in its profile.
async function devtoolsPort() {
	const file = path.join(profile, 'DevToolsActivePort');
	for (let i = 0; i < 200; i++) {
		if (fs.existsSync(file)) {
			const port = fs.readFileSync(file, 'utf8').split('\n')[0];
			if (/^[0-9]+$/.test(port)) return port;
		}
		await sleep(50);
	}
	throw new Error('no DevToolsActivePort');
}

async function main() {
	const port = await devtoolsPort();
	const targets = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
	const page = targets.find((t) => t.type === 'page');
	if (!page) throw new Error('no page target');
	const ws = new WebSocket(page.webSocketDebuggerUrl);
	await new Promise((ok, fail) => { ws.onopen = ok; ws.onerror = fail; });
	let id = 0;
	const pending = new Map();
	const waiters = [];
	ws.onmessage = (m) => {
		const msg = JSON.parse(m.data);
		if (msg.id && pending.has(msg.id)) {
			const { ok, fail } = pending.get(msg.id);
			pending.delete(msg.id);
			if (msg.error) fail(new Error(JSON.stringify(msg.error)));
			else ok(msg.result);
		} else if (msg.method) {
			for (const w of waiters.slice()) {
				if (w.method === msg.method && w.test(msg.params)) {
					waiters.splice(waiters.indexOf(w), 1);
					w.ok(msg.params);
				}
			}
		}
	};
	const send = (method, params = {}) => new Promise((ok, fail) => {
		id += 1;
		pending.set(id, { ok, fail });
		ws.send(JSON.stringify({ id, method, params }));
	});
	const event = (method, test = () => true) =>
		new Promise((ok) => waiters.push({ method, test, ok }));

	await send('Page.enable');
	await send('Network.enable');
	if (authorization) {
		await send('Network.setExtraHTTPHeaders',
			{ headers: { Authorization: authorization } });
	}
	const response = event('Network.responseReceived', (p) => p.type === 'Document');
	const loaded = event('Page.loadEventFired');
	await send('Page.navigate', { url });
	const doc = await response;
	await loaded;
	const text = (await send('Runtime.evaluate', {
		expression: 'document.body ? document.body.innerText : ""',
		returnByValue: true,
	})).result.value;
	const shot = await send('Page.captureScreenshot',
		{ format: 'png', captureBeyondViewport: true });
	fs.writeFileSync(screenshot, Buffer.from(shot.data, 'base64'));
	// A phone's width: every section starts at the same left edge.
	await send('Emulation.setDeviceMetricsOverride',
		{ width: 390, height: 800, deviceScaleFactor: 1, mobile: true });
	const columns = (await send('Runtime.evaluate', {
		expression: 'new Set([...document.querySelectorAll("section")]' +
			'.map((s) => Math.round(s.getBoundingClientRect().left))).size',
		returnByValue: true,
	})).result.value;
	process.stdout.write(JSON.stringify({
		status: doc.response.status, text, columns_at_phone: columns,
	}) + '\n');
	ws.close();
}

main().then(() => { clearTimeout(timer); stop(0); },
	(e) => { clearTimeout(timer); stop(1, `${e.message}; chromium said: ${stderr.slice(-2000)}`); });
