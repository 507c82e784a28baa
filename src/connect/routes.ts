/**
 * The connect routes on the public server (mounted by src/webhooks/index.ts when PUBLIC_URL is set): GET only,
 * rate-limited per client address (CONNECT_RATE_PER_MIN, per process), and anything not proven by a signed link, a
 * live `state` or a signed pick gets the server's one 401 (decision 0115), whatever the tenant.
 */
import type { HttpBindings } from '@hono/node-server';
import type { Context, Hono } from 'hono';
import type { Connect, ConnectAnswer } from './connect.js';
import type { Logger } from '../logger.js';
import { tooManyPage, unavailablePage } from './pages.js';

type Env = { Bindings: HttpBindings };

/** Requests per client address in the current minute (per process), bounded in the addresses it remembers. */
export class AddressLimiter {
  readonly #windows = new Map<string, { start: number; count: number }>();
  constructor(private readonly perMin: number) {}
  /** 0 when allowed, else the seconds until the window ends. */
  take(address: string, now = Date.now()): number {
    const w = this.#windows.get(address);
    if (!w || now - w.start >= 60_000) {
      if (this.#windows.size >= 10_000) this.#windows.clear();
      this.#windows.set(address, { start: now, count: 1 });
      return 0;
    }
    if (w.count >= this.perMin) return Math.max(1, Math.ceil((w.start + 60_000 - now) / 1000));
    w.count += 1;
    return 0;
  }
}

export interface ConnectRoutesOptions {
  connect: Connect;
  ratePerMin: number;
  logger: Logger;
}

/** Adds the routes to the public server's app; `unauthorized` is that server's one 401. */
export function mountConnectRoutes(app: Hono<Env>, o: ConnectRoutesOptions, unauthorized: () => Response): void {
  const limiter = new AddressLimiter(o.ratePerMin);
  const answer = (a: ConnectAnswer): Response => {
    if (a.kind === 'unauthorized') return unauthorized();
    if (a.kind === 'page') return a.response;
    return new Response(null, { status: 302, headers: { location: a.location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' } });
  };
  const limited = (c: Context<Env>): Response | undefined => {
    const wait = limiter.take(c.env.incoming.socket.remoteAddress ?? 'unknown');
    return wait > 0 ? tooManyPage(wait) : undefined;
  };
  // A failure (Redis away) is answered here, named by the route alone: the server's own error log would name the
  // path, which holds the link or the pick.
  const guarded = async (route: string, run: () => Promise<ConnectAnswer>): Promise<Response> => {
    try {
      return answer(await run());
    } catch (err) {
      o.logger.error({ route, err: (err as Error).name, reason: (err as Error).message }, 'connect: request failed');
      return unavailablePage();
    }
  };
  app.get('/connect/:link', async (c) => limited(c) ?? guarded('/connect/{link}', () => o.connect.start(c.req.param('link'))));
  app.get('/oauth/callback', async (c) => limited(c) ?? guarded('/oauth/callback', () => o.connect.callback(new URL(c.req.url))));
  app.get('/oauth/choose/:pick', async (c) => limited(c) ?? guarded('/oauth/choose/{pick}', () => o.connect.choose(c.req.param('pick'))));
}
