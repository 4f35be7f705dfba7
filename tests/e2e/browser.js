// browser.js - loads one page in Debian's headless Chromium through the
// DevTools protocol over a pipe (--remote-debugging-pipe: NUL-separated JSON
// on descriptors 3 and 4; no WebSocket, no npm package, no browser
// download) and prints what a person would see, as JSON: {status, text,
// columns_at_phone}.
//
//   node browser.js CHROMIUM PROFILE_DIR URL SCREENSHOT.png [AUTHORIZATION]
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

const [chromium, profile, url, screenshot, authorization] = process.argv.slice(2);
const TIMEOUT_MS = 30000;

const browser = spawn(chromium, [
	'--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run',
	'--disable-extensions', '--disable-background-networking',
	'--remote-debugging-pipe', `--user-data-dir=${profile}`,
	'--window-size=1000,800', 'about:blank',
], { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
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

// The protocol: commands out on descriptor 3, answers and events in on 4,
// each a JSON text ended by a NUL byte.
const toBrowser = browser.stdio[3];
const fromBrowser = browser.stdio[4];
let id = 0;
const pending = new Map();
const waiters = [];
let inbox = '';
fromBrowser.on('data', (chunk) => {
	inbox += chunk.toString('utf8');
	let end;
	while ((end = inbox.indexOf('\0')) >= 0) {
		const msg = JSON.parse(inbox.slice(0, end));
		inbox = inbox.slice(end + 1);
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
	}
});
// A command to the browser, or with sessionId to the page.
const send = (method, params = {}, sessionId = undefined) => new Promise((ok, fail) => {
	id += 1;
	pending.set(id, { ok, fail });
	toBrowser.write(JSON.stringify({ id, method, params, sessionId }) + '\0');
});
const event = (method, test = () => true) =>
	new Promise((ok) => waiters.push({ method, test, ok }));

async function main() {
	const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
	const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
	const page = (method, params) => send(method, params, sessionId);

	await page('Page.enable');
	await page('Network.enable');
	if (authorization) {
		await page('Network.setExtraHTTPHeaders',
			{ headers: { Authorization: authorization } });
	}
	const response = event('Network.responseReceived', (p) => p.type === 'Document');
	const loaded = event('Page.loadEventFired');
	await page('Page.navigate', { url });
	const doc = await response;
	await loaded;
	const text = (await page('Runtime.evaluate', {
		expression: 'document.body ? document.body.innerText : ""',
		returnByValue: true,
	})).result.value;
	const shot = await page('Page.captureScreenshot',
		{ format: 'png', captureBeyondViewport: true });
	fs.writeFileSync(screenshot, Buffer.from(shot.data, 'base64'));
	// A phone's width: every section starts at the same left edge.
	await page('Emulation.setDeviceMetricsOverride',
		{ width: 390, height: 800, deviceScaleFactor: 1, mobile: true });
	const columns = (await page('Runtime.evaluate', {
		expression: 'new Set([...document.querySelectorAll("section")]' +
			'.map((s) => Math.round(s.getBoundingClientRect().left))).size',
		returnByValue: true,
	})).result.value;
	process.stdout.write(JSON.stringify({
		status: doc.response.status, text, columns_at_phone: columns,
	}) + '\n');
}

main().then(() => { clearTimeout(timer); stop(0); },
	(e) => { clearTimeout(timer); stop(1, `${e.message}; chromium said: ${stderr.slice(-2000)}`); });
