/**
 * Behind an https PUBLIC_URL (TLS ends at a proxy in front), the console's cookies are `__Host-` prefixed and Secure,
 * besides HttpOnly and SameSite=Strict, on the wire: a sign-in over HTTP on 127.0.0.1 as the proxy would send it.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';

const KEY = 'ops-key-Wq8Zt3Lm6Vb2Nc9Xk4Rj7Hp5Fd1Gs0Ay';

describe('the console behind https', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let base: string;

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [{ id: 'acme', platform: { kind: 'memory', name: 'acme' } }],
      env: { WEBHOOK_PORT: String(port), WEBHOOK_HOST: '127.0.0.1', PUBLIC_URL: 'https://console.example.com', API_KEYS: `ops:${KEY}` },
    });
  });
  afterAll(async () => rig?.close());

  it('sets __Host- cookies, Secure, HttpOnly, SameSite=Strict, Path=/, and takes them back', async () => {
    const form = await request(`${base}/console/sign-in`);
    const signInCookie = String(form.headers['set-cookie']);
    expect(signInCookie).toMatch(/^__Host-cs_console_signin=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=600; HttpOnly; Secure; SameSite=Strict$/);
    const token = /value="([A-Za-z0-9_-]{43})"/.exec(await form.body.text())?.[1] ?? '';
    expect(signInCookie).toContain(token);

    const signedIn = await request(`${base}/console/sign-in`, {
      method: 'POST',
      headers: { cookie: signInCookie.split(';')[0] ?? '', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: token, key: KEY }).toString(),
    });
    await signedIn.body.dump();
    expect(signedIn.statusCode).toBe(303);
    const cookies = ([] as string[]).concat(signedIn.headers['set-cookie'] ?? []);
    const session = cookies.find((c) => c.startsWith('__Host-cs_console='));
    expect(session).toMatch(/^__Host-cs_console=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=28800; HttpOnly; Secure; SameSite=Strict$/);
    expect(cookies.some((c) => c.startsWith('__Host-cs_console_signin=; Path=/; Max-Age=0'))).toBe(true);

    // The prefixed cookie opens the pages; the unprefixed name of an http deployment does not.
    const value = session?.split(';')[0]?.split('=')[1] ?? '';
    const page = await request(`${base}/console/tenants`, { headers: { cookie: `__Host-cs_console=${value}` } });
    expect(page.statusCode).toBe(200);
    expect(await page.body.text()).toContain('acme');
    const plain = await request(`${base}/console/tenants`, { headers: { cookie: `cs_console=${value}` } });
    await plain.body.dump();
    expect(plain.statusCode).toBe(303);
  });
});
