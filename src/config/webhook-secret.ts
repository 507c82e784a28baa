/**
 * The form of a run-webhook signing secret (RUN_WEBHOOK_SECRET, a tenant's `notify.secret`): `whsec_` and the base64
 * of 24 to 64 random bytes, the form every Standard Webhooks library takes (docs/run-webhooks.md). Checked at load,
 * so a bad secret stops the start naming the setting; the message never holds the value.
 */
export const WEBHOOK_SECRET_RULE = 'must be whsec_ and the base64 of 24 to 64 random bytes, the Standard Webhooks form (e.g. `echo "whsec_$(openssl rand -base64 32)"`)';

/** Whether `text` is a Standard Webhooks secret: `whsec_<base64 of 24 to 64 bytes>`. */
export function isWebhookSecret(text: string): boolean {
  const m = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(text);
  if (!m || m[1]!.length % 4 !== 0) return false;
  const bytes = Buffer.from(m[1]!, 'base64').length;
  return bytes >= 24 && bytes <= 64;
}
