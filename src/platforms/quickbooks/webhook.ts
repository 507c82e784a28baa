/**
 * Intuit's change notifications (issue 15, decision 0075), as the public server's route for QuickBooks
 * (`POST /webhooks/quickbooks`): the body's HMAC-SHA256 (base64, `intuit-signature`) under the verifier token of the
 * tenant(s) of a realm it names. One HMAC per verifier token (one per Intuit app), not per tenant; with none at all,
 * a stand-in token costs what one would. Each realm whose tenant's token verified the body gets one requested run; a
 * realm of no such tenant is ignored. Notifications carry no data we use: they only request runs.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { sameDigest as same } from '../../guards.js';
import { z } from 'zod';
import { parseJsonBounded } from '../../json-bounded.js';
import type { PlatformWebhook } from '../module.js';
import type { QuickBooksConfig } from './config.js';

/** Intuit's change notification (only what is read of it: the realms; entities are counted). */
const intuitNotificationSchema = z.object({
  eventNotifications: z.array(
    z.object({
      realmId: z.string().min(1),
      dataChangeEvent: z.object({ entities: z.array(z.object({ name: z.string(), id: z.string(), operation: z.string() }).loose()) }).loose().optional(),
    }).loose(),
  ),
});

const MAX_DEPTH = 64;
const STAND_IN = randomBytes(32).toString('hex');

export const quickBooksWebhook: PlatformWebhook<QuickBooksConfig> = {
  path: 'quickbooks',
  // Intuit's notifications are a few KB (an entity change is about 100 bytes); each is read and its HMAC computed
  // before it is authenticated, so the cap bounds what anyone can make the server do (decision 0173).
  maxBodyBytes: 64 * 1024,
  signatureHeader: 'intuit-signature',
  secretOf: (c) => c.webhookVerifierToken,
  handle(body, signatureText, tenants) {
    const signature = Buffer.from(signatureText.trim(), 'base64');
    if (signature.length === 0) return { kind: 'invalid' };
    const macs = new Map<string, Buffer>();
    const macUnder = (token: string): Buffer => {
      let mac = macs.get(token);
      if (mac === undefined) macs.set(token, (mac = createHmac('sha256', token).update(body).digest()));
      return mac;
    };
    const listening = tenants.filter((t) => t.config.webhookVerifierToken !== undefined);
    if (listening.length === 0) same(signature, macUnder(STAND_IN));
    const verified = listening.filter((t) => same(signature, macUnder(t.config.webhookVerifierToken!.reveal())));
    if (verified.length === 0) return { kind: 'invalid' };
    const json = parseJsonBounded(body.toString('utf8'), MAX_DEPTH);
    if (!json.ok) return { kind: 'unreadable', why: json.why === 'too_deep' ? `the body nests deeper than ${MAX_DEPTH} levels` : 'the body is not valid JSON' };
    const parsed = intuitNotificationSchema.safeParse(json.value);
    if (!parsed.success) return { kind: 'unreadable', why: 'not a QuickBooks change notification (eventNotifications[].realmId)' };
    const requested: string[] = [];
    const ignored: string[] = [];
    for (const n of parsed.data.eventNotifications) {
      const of = verified.filter((t) => t.connection === n.realmId);
      if (of.length === 0) ignored.push(n.realmId);
      for (const t of of) if (!requested.includes(t.id)) requested.push(t.id);
    }
    return { kind: 'ok', tenants: requested, ignored };
  },
};
