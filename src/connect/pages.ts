/**
 * The plain pages a customer sees: connected, not connected (and why, in words), and the organisation picker. They
 * carry nothing secret (no token, code, state or verifier) and load nothing: inline style, no script, framed by no
 * one (Content-Security-Policy), never cached, never sent as a Referer.
 */
const HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'none'; frame-ancestors 'none'",
} as const;

export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(status: number, title: string, body: string): Response {
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;line-height:1.5}li{margin:.5rem 0}</style></head>
<body><h1>${escapeHtml(title)}</h1>
${body}
</body></html>
`;
  return new Response(html, { status, headers: HEADERS });
}

/** `label`: the platform's name people read (its module's). */
export function connectedPage(label: string, company: string | undefined): Response {
  const what = company ? `<strong>${escapeHtml(company)}</strong>` : `your ${escapeHtml(label)} company`;
  return page(200, `Connected to ${label}`, `<p>${what} is connected. You can close this page.</p>`);
}

/** Why a connection was not made, in the customer's words; nothing was stored. */
export function notConnectedPage(label: string, why: string): Response {
  return page(400, `Not connected to ${label}`, `<p>${escapeHtml(why)}</p><p>Nothing was changed. Ask whoever sent you the link for a new one if you want to try again.</p>`);
}

/** `word`: what one connection is on the platform (`organisation`). */
export function pickPage(label: string, word: string, choices: readonly { name: string; href: string }[]): Response {
  const items = choices.map((c) => `<li><a href="${escapeHtml(c.href)}">${escapeHtml(c.name)}</a></li>`).join('\n');
  return page(200, `Choose the ${word} to connect`, `<p>You gave access to several ${escapeHtml(label)} ${escapeHtml(word)}s. Choose the one to connect:</p>\n<ul>\n${items}\n</ul>`);
}

export function unavailablePage(): Response {
  return page(503, 'Please try again', '<p>The connection could not be completed just now. Please open the link again in a few minutes.</p>');
}

export function tooManyPage(retryAfterS: number): Response {
  const r = page(429, 'Too many requests', '<p>Please wait a minute and open the link again.</p>');
  r.headers.set('retry-after', String(retryAfterS));
  return r;
}

/** The customer's words for what the platform (`name`: its label) said. */
export function reasonText(name: string, error: string): string {
  switch (error) {
    case 'access_denied':
      return `The connection was not allowed in ${name}.`;
    case 'invalid_scope':
    case 'unauthorized_client':
      return `${name} refused the access this app asks for. Whoever sent you the link has to fix the app's settings first.`;
    case 'invalid_grant':
      return `The approval expired before it could be used (or was already used).`;
    case 'no_refresh_token':
      return `${name} did not grant lasting access (offline access).`;
    default:
      return `${name} could not complete the connection (${error}).`;
  }
}
