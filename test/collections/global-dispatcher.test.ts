/**
 * Node's global `fetch` comes with its own undici (another version than ours), which makes its Agent the process's
 * global dispatcher, under a symbol our undici shares, when it loads before ours. The dashboard's server (Hono reads
 * the global Request at its import) did so in one process, and every token call failed there: the run waited for a
 * token forever. Here the global fetch is loaded first, on purpose, and our modules after it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type * as Undici from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type * as Errors from '../../src/collections/errors.js';
import type * as Http from '../../src/collections/http.js';
import type * as Token from '../../src/collections/token.js';
import type * as SecretModule from '../../src/secret.js';
import type * as FixtureModule from './fixture.js';

describe("after Node's own fetch has taken the global dispatcher", () => {
  // Type imports only above (erased): the modules themselves are loaded in beforeAll, after Node's undici.
  let undici: typeof Undici;
  let http: typeof Http;
  let token: typeof Token;
  let errors: typeof Errors;
  let fixture: typeof FixtureModule;
  let Secret: typeof SecretModule.Secret;
  let f: FixtureModule.Fixture;
  let silent: Server;
  let silentUrl: string;

  beforeAll(async () => {
    // Reading the global Request loads Node's bundled undici (as Hono's server does at its import), before ours.
    expect(typeof globalThis.Request).toBe('function');
    undici = await import('undici');
    http = await import('../../src/collections/http.js');
    token = await import('../../src/collections/token.js');
    errors = await import('../../src/collections/errors.js');
    fixture = await import('./fixture.js');
    ({ Secret } = await import('../../src/secret.js'));
    f = await fixture.startFixture();
    silent = createServer(() => undefined); // reads the request, never answers
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    silent?.closeAllConnections();
    await new Promise((resolve) => silent?.close(resolve));
    await f?.close();
  });

  it('the precondition holds: the global dispatcher is not an Agent of our undici', () => {
    expect(undici.getGlobalDispatcher()).not.toBeInstanceOf(undici.Agent);
  });

  it('requestToken still gets a token', async () => {
    const t = await token.requestToken({ authUrl: f.sim.authUrl, clientId: fixture.CLIENT_ID, clientSecret: new Secret(fixture.CLIENT_SECRET), timeoutMs: 5_000 });
    expect(t.accessToken.split('.')).toHaveLength(3);
  });

  it("a request sent through Node's own Agent is answered, and aborted at its time budget", async () => {
    const ok = await http.send(undici.getGlobalDispatcher(), { origin: f.sim.authUrl, path: '/auth/v1/api-key/auth', method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }, { route: 'POST /auth', idempotent: true, timeoutMs: 5_000, headersMs: 5_000, bodyMs: 5_000 });
    expect(ok.status).toBeGreaterThanOrEqual(400); // an empty body is refused, but answered
    const started = Date.now();
    const err = await fixture.caught(http.send(undici.getGlobalDispatcher(), { origin: silentUrl, path: '/', method: 'GET', headers: {} }, { route: 'GET /', idempotent: true, timeoutMs: 300, headersMs: 10_000, bodyMs: 10_000 }));
    expect(err).toBeInstanceOf(errors.AmbiguousError);
    expect((err as Error).message).toContain('no answer within 300 ms');
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
