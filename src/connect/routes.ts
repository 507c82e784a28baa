/**
 * The connect routes on the public server (mounted by src/webhooks/index.ts when PUBLIC_URL is set): GET only, and
 * anything not proven by a signed, outstanding link, a live `state` from the browser that opened the link, or a
 * signed pick gets the server's one 401 (decision 0115), whatever the tenant. Opening a link sets the browser's
 * cookie (browser.ts); the callback and the pick read it.
 *
 * Failed checks are counted per client address (CONNECT_RATE_PER_MIN a minute, per process; decision 0162): past it,
 * a failed check is answered 429 instead of 401. Only failures count, and a check that succeeds is never refused by
 * the count: behind the TLS proxy every customer may share one address, and guessing links cannot lock customers
 * out. The address is the one TRUST_PROXY lets the proxy name (src/client-address.ts), else the socket's peer.
 */
import type { HttpBindings } from '@hono/node-server';
import type { Context, Hono } from 'hono';
import { clientAddress, NO_PROXY, type TrustProxy } from '../client-address.js';
import type { Connect, ConnectAnswer } from './connect.js';
import { MinuteLimiter } from '../http-server.js';
import type { Logger } from '../logger.js';
import { browserCookie, browserOf, newBrowser } from './browser.js';
import { tooManyPage, unavailablePage } from './pages.js';

type Env = { Bindings: HttpBindings };

export interface ConnectRoutesOptions {
  connect: Connect;
  /** CONNECT_RATE_PER_MIN: failed checks per client address per minute before 429. */
  ratePerMin: number;
  /** TRUST_PROXY: whose X-Forwarded-For names the client (default: nobody's). */
  trustProxy?: TrustProxy;
  logger: Logger;
}

/** Adds the routes to the public server's app; `unauthorized` is that server's one 401. */
export function mountConnectRoutes(app: Hono<Env>, o: ConnectRoutesOptions, unauthorized: () => Response): void {
  const failures = new MinuteLimiter(o.ratePerMin);
  const trust = o.trustProxy ?? NO_PROXY;
  const secure = o.connect.redirectUri.startsWith('https://');
  const browser = (c: Context<Env>): string | undefined => browserOf(c.req.header('cookie'), secure);
  const redirect = (location: string, cookie?: string): Response =>
    new Response(null, { status: 302, headers: { location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer', ...(cookie ? { 'set-cookie': cookie } : {}) } });
  /**
   * Runs a check and answers it. A failure (the one 401) counts against the client's address; past the count it is
   * a 429. A failure of ours (Redis away) is answered here, named by the route alone: the server's own error log
   * would name the path, which holds the link or the pick.
   */
  const checked = async (c: Context<Env>, route: string, run: () => Promise<ConnectAnswer>, cookie?: string): Promise<Response> => {
    let a: ConnectAnswer;
    try {
      a = await run();
    } catch (err) {
      o.logger.error({ route, err: (err as Error).name, reason: (err as Error).message }, 'connect: request failed');
      return unavailablePage();
    }
    if (a.kind === 'page') return a.response;
    if (a.kind === 'redirect') return redirect(a.location, cookie);
    const wait = failures.take(clientAddress(c, trust));
    return wait > 0 ? tooManyPage(wait) : unauthorized();
  };
  app.get('/connect/:link', async (c) => {
    const value = browser(c) ?? newBrowser();
    return checked(c, '/connect/{link}', () => o.connect.start(c.req.param('link'), value), browserCookie(value, secure));
  });
  app.get('/oauth/callback', async (c) => checked(c, '/oauth/callback', () => o.connect.callback(new URL(c.req.url), browser(c))));
  app.get('/oauth/choose/:pick', async (c) => checked(c, '/oauth/choose/{pick}', () => o.connect.choose(c.req.param('pick'), browser(c))));
}
