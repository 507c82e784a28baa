/**
 * The connect routes on the public server (mounted by src/webhooks/index.ts when PUBLIC_URL is set): GET only,
 * rate-limited per client address (CONNECT_RATE_PER_MIN, per process), and anything not proven by a signed link, a
 * live `state` or a signed pick gets the server's one 401 (decision 0115), whatever the tenant. Opening a link sets
 * the browser's cookie (browser.ts); the callback and the pick read it.
 */
import type { HttpBindings } from '@hono/node-server';
import type { Context, Hono } from 'hono';
import type { Connect, ConnectAnswer } from './connect.js';
import { MinuteLimiter } from '../http-server.js';
import type { Logger } from '../logger.js';
import { browserCookie, browserOf, newBrowser } from './browser.js';
import { tooManyPage, unavailablePage } from './pages.js';

type Env = { Bindings: HttpBindings };

export interface ConnectRoutesOptions {
  connect: Connect;
  ratePerMin: number;
  logger: Logger;
}

/** Adds the routes to the public server's app; `unauthorized` is that server's one 401. */
export function mountConnectRoutes(app: Hono<Env>, o: ConnectRoutesOptions, unauthorized: () => Response): void {
  const limiter = new MinuteLimiter(o.ratePerMin);
  const secure = o.connect.redirectUri.startsWith('https://');
  const browser = (c: Context<Env>): string | undefined => browserOf(c.req.header('cookie'), secure);
  const answer = (a: ConnectAnswer, cookie?: string): Response => {
    if (a.kind === 'unauthorized') return unauthorized();
    if (a.kind === 'page') return a.response;
    return new Response(null, { status: 302, headers: { location: a.location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer', ...(cookie ? { 'set-cookie': cookie } : {}) } });
  };
  const limited = (c: Context<Env>): Response | undefined => {
    const wait = limiter.take(c.env.incoming.socket.remoteAddress ?? 'unknown');
    return wait > 0 ? tooManyPage(wait) : undefined;
  };
  // A failure (Redis away) is answered here, named by the route alone: the server's own error log would name the
  // path, which holds the link or the pick.
  const guarded = async (route: string, run: () => Promise<ConnectAnswer>, cookie?: string): Promise<Response> => {
    try {
      return answer(await run(), cookie);
    } catch (err) {
      o.logger.error({ route, err: (err as Error).name, reason: (err as Error).message }, 'connect: request failed');
      return unavailablePage();
    }
  };
  app.get('/connect/:link', async (c) => {
    const value = browser(c) ?? newBrowser();
    return limited(c) ?? guarded('/connect/{link}', () => o.connect.start(c.req.param('link'), value), browserCookie(value, secure));
  });
  app.get('/oauth/callback', async (c) => limited(c) ?? guarded('/oauth/callback', () => o.connect.callback(new URL(c.req.url), browser(c))));
  app.get('/oauth/choose/:pick', async (c) => limited(c) ?? guarded('/oauth/choose/{pick}', () => o.connect.choose(c.req.param('pick'), browser(c))));
}
