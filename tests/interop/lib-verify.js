#!/usr/bin/env node
// lib-verify.js - ask a payment provider's OWN npm library whether it accepts
// a webhook signature, so payhook's signing/verification can be cross-checked
// against the providers' reference code.
//
//   node lib-verify.js PROVIDER SECRET BODYFILE [--url URL]  < headers
//
// stdin: header lines "Name: value" (names are matched case-insensitively;
// blank lines are ignored). adyen reads no stdin: BODYFILE must be the signed body.
//   stripe    stripe.webhooks.constructEvent(body, header, secret)  (default 300 s tolerance)
//   standard  new Webhook(secret).verify(body, headers)             (5 min both ways)
//   razorpay  Razorpay.validateWebhookSignature(body, sig, secret)
//   square    WebhooksHelper.verifySignature({requestBody, signatureHeader,
//             signatureKey, notificationUrl})                        (needs --url)
//   paddle    new Paddle(apiKey).webhooks.isSignatureValid(body, secret, header)
//             (the SDK rejects ts older than 5 s)
//   adyen     hmacValidator.validateHMAC(item, hexKey) for every NotificationRequestItem
// Exit: 0 library accepts, 1 library rejects (reason on stderr), 2 usage error,
//       3 no library for this provider (komoju, payjp, shopify).
'use strict';

const fs = require('fs');

function usage(msg) {
  if (msg) process.stderr.write(`lib-verify: ${msg}\n`);
  process.stderr.write('usage: lib-verify.js PROVIDER SECRET BODYFILE [--url URL] < header-lines\n');
  process.exit(2);
}

function parseArgs(argv) {
  const pos = [];
  const opt = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--url') {
      if (i + 1 >= argv.length) usage('--url needs a value');
      opt.url = argv[++i];
    } else if (a.startsWith('--')) {
      usage(`unknown option ${a}`);
    } else {
      pos.push(a);
    }
  }
  if (pos.length !== 3) usage('expected PROVIDER SECRET BODYFILE');
  return { provider: pos[0], secret: pos[1], bodyFile: pos[2], opt };
}

// "Name: value" lines -> { lowercased-name: value }; the first occurrence wins.
function readHeaders() {
  let text = '';
  try {
    text = fs.readFileSync(0, 'utf8');
  } catch (e) {
    text = '';
  }
  const h = {};
  for (const raw of text.split(/\r?\n/)) {
    if (raw.trim() === '') continue;
    const i = raw.indexOf(':');
    if (i <= 0) usage(`bad header line: ${raw}`);
    const name = raw.slice(0, i).trim().toLowerCase();
    if (!(name in h)) h[name] = raw.slice(i + 1).trim();
  }
  return h;
}

function accept() {
  process.exit(0);
}
function reject(reason) {
  process.stderr.write(`${provider}: rejected: ${reason}\n`);
  process.exit(1);
}

const { provider, secret, bodyFile, opt } = parseArgs(process.argv.slice(2));
let body;
try {
  body = fs.readFileSync(bodyFile, 'utf8');
} catch (e) {
  usage(`cannot read ${bodyFile}: ${e.message}`);
}

async function main() {
  switch (provider) {
    case 'stripe': {
      const h = readHeaders();
      const Stripe = require('stripe');
      const stripe = new Stripe('sk_test_interop_unused'); // no request is ever sent
      try {
        stripe.webhooks.constructEvent(body, h['stripe-signature'], secret);
      } catch (e) {
        reject(e.message.split('\n')[0]);
      }
      return accept();
    }
    case 'standard': {
      const h = readHeaders();
      const { Webhook } = require('standardwebhooks');
      let wh;
      try {
        wh = new Webhook(secret);
      } catch (e) {
        usage(`standardwebhooks rejects the secret: ${e.message}`);
      }
      try {
        wh.verify(body, h);
      } catch (e) {
        reject(e.message);
      }
      return accept();
    }
    case 'razorpay': {
      const h = readHeaders();
      const Razorpay = require('razorpay');
      let ok;
      try {
        ok = Razorpay.validateWebhookSignature(body, h['x-razorpay-signature'], secret);
      } catch (e) {
        reject(e.message);
      }
      return ok ? accept() : reject('X-Razorpay-Signature does not match (validateWebhookSignature returned false)');
    }
    case 'square': {
      if (opt.url === undefined) usage('square needs --url (the notification URL is signed)');
      const h = readHeaders();
      const { WebhooksHelper } = require('square');
      let ok;
      try {
        ok = await WebhooksHelper.verifySignature({
          requestBody: body,
          signatureHeader: h['x-square-hmacsha256-signature'],
          signatureKey: secret,
          notificationUrl: opt.url,
        });
      } catch (e) {
        reject(e.message);
      }
      return ok ? accept() : reject('x-square-hmacsha256-signature does not match (verifySignature returned false)');
    }
    case 'paddle': {
      const h = readHeaders();
      const { Paddle, LogLevel } = require('@paddle/paddle-node-sdk');
      // The API key is never used: webhook verification is local.
      const paddle = new Paddle('pdl_sdbx_apikey_interop_unused', { logLevel: LogLevel.none });
      let ok;
      try {
        ok = await paddle.webhooks.isSignatureValid(body, secret, h['paddle-signature']);
      } catch (e) {
        reject(e.message);
      }
      return ok
        ? accept()
        : reject('Paddle-Signature does not match, or ts is more than 5 s old (isSignatureValid returned false)');
    }
    case 'adyen': {
      const { hmacValidator: HmacValidator } = require('@adyen/api-library');
      const validator = new HmacValidator();
      let doc;
      try {
        doc = JSON.parse(body);
      } catch (e) {
        reject(`body is not JSON: ${e.message}`);
      }
      const items = (doc.notificationItems || []).map((n) => n && n.NotificationRequestItem);
      if (items.length === 0) reject('no notificationItems');
      for (let i = 0; i < items.length; i++) {
        if (!items[i]) reject(`notificationItems[${i}] has no NotificationRequestItem`);
        let ok;
        try {
          ok = validator.validateHMAC(items[i], secret);
        } catch (e) {
          reject(`item ${i} (${items[i].pspReference}): ${e.message}`);
        }
        if (!ok) reject(`item ${i} (${items[i].pspReference}): hmacSignature does not match`);
      }
      return accept();
    }
    case 'komoju':
    case 'payjp':
    case 'shopify':
      process.stderr.write(`${provider}: no official npm library with a webhook verifier is pinned here\n`);
      process.exit(3);
      break;
    default:
      usage(`unknown provider ${provider}`);
  }
}

main().catch((e) => {
  process.stderr.write(`lib-verify: ${e.stack || e}\n`);
  process.exit(2);
});
