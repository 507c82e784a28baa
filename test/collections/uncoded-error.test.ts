/**
 * An error without a code from the dispatcher (not a socket's, not undici's coded ones) is named in the failure: it
 * once read "connection failed after sending (unknown)" in every token call, and the cause (Node's bundled undici
 * refusing our abort object) took a day to find.
 */
import { Dispatcher } from 'undici';
import { describe, expect, it } from 'vitest';
import { AmbiguousError, TransientError } from '../../src/collections/errors.js';
import { send } from '../../src/collections/http.js';
import { requestToken } from '../../src/collections/token.js';
import { Secret } from '../../src/secret.js';
import { caught } from './util.js';

/** A third-party double: undici's Dispatcher whose every request fails in its own setup. */
class RefusingDispatcher extends Dispatcher {
  override dispatch(): boolean {
    throw new TypeError('signal.addListener is not a function');
  }
}

describe('an error without a code', () => {
  it('is ambiguous and named in the message of send', async () => {
    const err = await caught(send(new RefusingDispatcher(), { origin: 'http://127.0.0.1:9', path: '/contact', method: 'POST', headers: {}, body: '{}' }, { route: 'POST /contact', idempotent: false, timeoutMs: 1_000, headersMs: 1_000, bodyMs: 1_000 }));
    expect(err).toBeInstanceOf(AmbiguousError);
    expect((err as Error).message).toBe('POST /contact: connection failed after sending (TypeError: signal.addListener is not a function); the write may have happened');
  });

  it('is named in the token call failure too, without the secret', async () => {
    const secret = 'secret-never-shown-41';
    const err = await caught(requestToken({ authUrl: 'http://127.0.0.1:9', clientId: 'c1', clientSecret: new Secret(secret), dispatcher: new RefusingDispatcher() }));
    expect(err).toBeInstanceOf(TransientError);
    expect((err as Error).message).toBe('POST /auth/v1/api-key/auth: no answer from the token endpoint (a token may have been issued): connection failed after sending (TypeError: signal.addListener is not a function)');
    expect(JSON.stringify(err)).not.toContain(secret);
  });
});
