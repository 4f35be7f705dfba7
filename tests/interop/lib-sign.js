#!/usr/bin/env node
// lib-sign.js - print the webhook signature that a payment provider's OWN npm
// library produces for a body, so payhook's C verifier can be tested against
// the providers' reference code instead of against our own reading of the docs.
//
//   node lib-sign.js PROVIDER SECRET BODYFILE [--timestamp UNIX] [--url URL] [--id ID]
//
// Prints one "Name: value" header line per header on stdout.
//   stripe    Stripe-Signature   stripe.webhooks.generateTestHeaderString()
//   standard  webhook-id / webhook-timestamp / webhook-signature   new Webhook(secret).sign()
//   adyen     prints the BODY instead, with every NotificationRequestItem's
//             additionalData.hmacSignature filled in by the library's hmacValidator
//             (placeholders are replaced in place, so the formatting is kept).
// Providers whose library only verifies (razorpay, square, paddle) and providers
// with no library here (komoju, payjp, shopify) exit 3 with "PROVIDER: library has no signer".
// Exit: 0 ok, 2 usage error, 3 no signer.
// Bodies are handed to the libraries as UTF-8 strings (that is what they accept),
// so only valid UTF-8 bodies round-trip byte for byte.
'use strict';

const fs = require('fs');

function usage(msg) {
  if (msg) process.stderr.write(`lib-sign: ${msg}\n`);
  process.stderr.write('usage: lib-sign.js PROVIDER SECRET BODYFILE [--timestamp UNIX] [--url URL] [--id ID]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const pos = [];
  const opt = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--timestamp' || a === '--url' || a === '--id') {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      opt[a.slice(2)] = argv[++i];
    } else if (a.startsWith('--')) {
      usage(`unknown option ${a}`);
    } else {
      pos.push(a);
    }
  }
  if (pos.length !== 3) usage('expected PROVIDER SECRET BODYFILE');
  return { provider: pos[0], secret: pos[1], bodyFile: pos[2], opt };
}

const { provider, secret, bodyFile, opt } = parseArgs(process.argv.slice(2));
let body;
try {
  body = fs.readFileSync(bodyFile, 'utf8');
} catch (e) {
  usage(`cannot read ${bodyFile}: ${e.message}`);
}
let ts = Math.floor(Date.now() / 1000);
if (opt.timestamp !== undefined) {
  if (!/^[0-9]+$/.test(opt.timestamp)) usage('--timestamp must be a unix time in seconds');
  ts = Number(opt.timestamp);
}

function noSigner() {
  process.stderr.write(`${provider}: library has no signer\n`);
  process.exit(3);
}

switch (provider) {
  case 'stripe': {
    const Stripe = require('stripe');
    const stripe = new Stripe('sk_test_interop_unused'); // no request is ever sent
    const header = stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp: ts });
    process.stdout.write(`Stripe-Signature: ${header}\n`);
    break;
  }
  case 'standard': {
    const { Webhook } = require('standardwebhooks');
    const id = opt.id !== undefined ? opt.id : 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W';
    let wh;
    try {
      wh = new Webhook(secret);
    } catch (e) {
      usage(`standardwebhooks rejects the secret: ${e.message}`);
    }
    const sig = wh.sign(id, new Date(ts * 1000), body);
    process.stdout.write(`webhook-id: ${id}\nwebhook-timestamp: ${ts}\nwebhook-signature: ${sig}\n`);
    break;
  }
  case 'adyen': {
    const { hmacValidator: HmacValidator } = require('@adyen/api-library');
    const validator = new HmacValidator();
    let doc;
    try {
      doc = JSON.parse(body);
    } catch (e) {
      usage(`adyen body is not JSON: ${e.message}`);
    }
    const items = (doc.notificationItems || []).map((n) => n.NotificationRequestItem);
    if (items.length === 0 || items.some((it) => !it)) usage('adyen body has no notificationItems[].NotificationRequestItem');
    const sigs = items.map((it) => validator.calculateHmac(it, secret));
    // Fill the existing "hmacSignature": "..." values in order, keeping the bytes around them.
    const re = /("hmacSignature"\s*:\s*)"[^"]*"/g;
    const found = body.match(re) || [];
    if (found.length === sigs.length) {
      let i = 0;
      process.stdout.write(body.replace(re, (m, pre) => `${pre}"${sigs[i++]}"`));
    } else {
      items.forEach((it, i) => {
        it.additionalData = Object.assign({}, it.additionalData, { hmacSignature: sigs[i] });
      });
      process.stdout.write(JSON.stringify(doc, null, 2));
    }
    break;
  }
  case 'razorpay': // razorpay: only Razorpay.validateWebhookSignature()
  case 'square': // square: only WebhooksHelper.verifySignature()
  case 'paddle': // @paddle/paddle-node-sdk: only webhooks.unmarshal()/isSignatureValid()
  case 'komoju': // no official npm library pinned here
  case 'payjp':
  case 'shopify':
    noSigner();
    break;
  default:
    usage(`unknown provider ${provider}`);
}
