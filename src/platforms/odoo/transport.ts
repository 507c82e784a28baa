/**
 * Odoo's two external APIs for reading, behind one `call` (decision 0210):
 * - JSON-2 (Odoo 19 and later; https://www.odoo.com/documentation/19.0/developer/reference/external_api.html):
 *   `POST /json/2/<model>/<method>` with `Authorization: bearer <apiKey>` and `X-Odoo-Database`, the method's
 *   parameters as a JSON object; errors are 4xx/5xx with `{name, message}` (401 `Invalid apikey`).
 * - JSON-RPC (16 to 21, deprecated from 19 and gone in 22; https://www.odoo.com/documentation/17.0/developer/reference/external_api.html):
 *   `POST /jsonrpc` calling `common.authenticate(db, username, apiKey, {})` for the uid, then
 *   `object.execute_kw(db, uid, apiKey, model, method, args, kwargs)`; errors come back HTTP 200 with `error.data.name`.
 * `auto` asks the server's version first: JSON-RPC's `common.version` answers on every version that has JSON-RPC,
 * `GET /web/version` from 19 (and is what is left from 22).
 *
 * Failures: AccessDenied, an `authenticate` answering false and 401 `Invalid apikey` are PLATFORM_AUTH_FAILED (a new
 * key is needed; never retried). 502/503/504 and other answers that are not Odoo's (a proxy's HTML), and transport
 * failures (resets, timeouts) are PLATFORM_UNAVAILABLE, retried by the one retry policy (wire.ts). Any other error
 * Odoo names (ValueError, AccessError, ...) is about our request: PLATFORM_BAD_RESPONSE with Odoo's message, for good.
 * A database that does not exist is named. Only reading methods can be called (decision 0215).
 */
import { request, type Dispatcher } from 'undici';
import type { Logger } from 'pino';
import { retry } from '../../retry.js';
import type { Secret } from '../../secret.js';
import { PlatformError } from '../types.js';
import { errorName, isTransient, platformPolicy, type RetrySettings } from '../wire.js';
import { authenticateSchema, jsonRpcAnswerSchema, majorOf, odooErrorSchema, versionSchema, type OdooError } from './schemas.js';

/** The only methods this worker calls on a model: it never writes, creates, unlinks or runs an action. */
export const READ_METHODS = ['search_read', 'search_count', 'read'] as const;
export type ReadMethod = (typeof READ_METHODS)[number];
export type Transport = 'json2' | 'jsonrpc';

export interface OdooCall {
  model: string;
  method: ReadMethod;
  domain?: readonly unknown[];
  ids?: readonly number[];
  fields?: readonly string[];
  limit?: number;
  offset?: number;
  order?: string;
  context?: Record<string, unknown>;
}

export interface OdooHttpSettings extends RetrySettings {
  requestTimeoutMs: number;
}
export const DEFAULT_ODOO_HTTP_SETTINGS: OdooHttpSettings = { requestTimeoutMs: 60_000, retries: 3, retryBaseMs: 500 };

export interface OdooClientOptions {
  url: string;
  database: string;
  username: string;
  apiKey: Secret;
  protocol: 'auto' | Transport;
  dispatcher: Dispatcher;
  settings?: Partial<OdooHttpSettings>;
  logger?: Logger | undefined;
}

interface Answer {
  status: number;
  type: string;
  text: string;
}

/** The lowest version with the JSON-2 API, and the lowest this adapter reads. */
export const JSON2_FROM = 19;
export const OLDEST_SUPPORTED = 16;

export class OdooClient {
  private readonly settings: OdooHttpSettings;
  private readonly base: string;
  #transport: Transport | undefined;
  #version: number | undefined;
  #uid: number | undefined;
  /** Requests sent (each attempt), for the bench and the logs. */
  requests = 0;

  constructor(private readonly o: OdooClientOptions) {
    this.settings = { ...DEFAULT_ODOO_HTTP_SETTINGS, ...o.settings };
    this.base = o.url.replace(/\/+$/, '');
    if (o.protocol !== 'auto') this.#transport = o.protocol;
  }

  /** The transport in use (after the first call), and the server's major version when it was asked. */
  get transport(): Transport | undefined {
    return this.#transport;
  }
  get version(): number | undefined {
    return this.#version;
  }

  /** One reading method on a model, by the transport the server's version (or the config) names. */
  async call(c: OdooCall, signal?: AbortSignal): Promise<unknown> {
    if (!(READ_METHODS as readonly string[]).includes(c.method)) throw new PlatformError('PLATFORM_BAD_RESPONSE', `odoo: ${c.method} is not a reading method; this worker only reads`, false);
    const transport = await this.transportOf(signal);
    const what = `${c.model}.${c.method}`;
    if (transport === 'json2') {
      const body: Record<string, unknown> = { context: c.context ?? {} };
      if (c.method === 'read') body['ids'] = c.ids ?? [];
      else body['domain'] = c.domain ?? [];
      for (const k of ['fields', 'limit', 'offset', 'order'] as const) if (c[k] !== undefined && !(c.method === 'search_count' && k !== 'limit')) body[k] = c[k];
      return this.send(what, `/json/2/${c.model}/${c.method}`, body, 'json2', signal);
    }
    const uid = await this.uid(signal);
    const args = c.method === 'read' ? [c.ids ?? []] : [c.domain ?? []];
    const kwargs: Record<string, unknown> = { context: c.context ?? {} };
    for (const k of ['fields', 'limit', 'offset', 'order'] as const) if (c[k] !== undefined && !(c.method === 'search_count' && k !== 'limit')) kwargs[k] = c[k];
    return this.rpc(what, 'object', 'execute_kw', [this.o.database, uid, this.o.apiKey.reveal(), c.model, c.method, args, kwargs], signal);
  }

  /** `auto`: the server's version decides (asked once per adapter); a forced transport is used as it is. */
  private async transportOf(signal?: AbortSignal): Promise<Transport> {
    if (this.#transport !== undefined) return this.#transport;
    let raw: unknown;
    try {
      raw = await this.rpc('common.version', 'common', 'version', [], signal);
    } catch (err) {
      // No JSON-RPC (Odoo 22 and later, or a proxy that serves only /json/2): GET /web/version answers from 19.
      if (!(err instanceof PlatformError && /answered 404/.test(err.message))) throw err;
      raw = await this.send('GET /web/version', '/web/version', undefined, 'json2', signal);
    }
    const parsed = versionSchema.safeParse(raw);
    const major = parsed.success ? majorOf(parsed.data) : undefined;
    if (major === undefined) throw new PlatformError('PLATFORM_BAD_RESPONSE', `odoo: ${this.base} did not say its version as Odoo does (is it an Odoo server?)`, false);
    if (major < OLDEST_SUPPORTED) throw new PlatformError('PLATFORM_BAD_RESPONSE', `odoo: ${this.base} runs Odoo ${major}; this worker reads Odoo ${OLDEST_SUPPORTED} and later`, false);
    this.#version = major;
    this.#transport = major >= JSON2_FROM ? 'json2' : 'jsonrpc';
    this.o.logger?.info({ version: major, transport: this.#transport }, 'odoo: server version read');
    return this.#transport;
  }

  /** JSON-RPC's uid for the bot user (authenticated once per adapter). */
  private async uid(signal?: AbortSignal): Promise<number> {
    if (this.#uid !== undefined) return this.#uid;
    const answer = authenticateSchema.safeParse(await this.rpc('common.authenticate', 'common', 'authenticate', [this.o.database, this.o.username, this.o.apiKey.reveal(), {}], signal));
    if (!answer.success) throw new PlatformError('PLATFORM_BAD_RESPONSE', 'odoo: common.authenticate answered neither a user id nor false', false);
    if (answer.data === false) throw this.refused('authenticate answered false');
    this.#uid = answer.data;
    return answer.data;
  }

  private async rpc(what: string, service: 'common' | 'object', method: string, args: unknown[], signal?: AbortSignal): Promise<unknown> {
    const body = { jsonrpc: '2.0', method: 'call', params: { service, method, args }, id: Math.floor(Math.random() * 1e9) };
    return this.send(what, '/jsonrpc', body, 'jsonrpc', signal);
  }

  /** One request under the retry policy: transient failures retried, anything else thrown at once. */
  private async send(what: string, path: string, body: unknown, transport: Transport, signal?: AbortSignal): Promise<unknown> {
    const policy = platformPolicy(this.settings, isTransient);
    return retry(
      async () => {
        const a = await this.post(what, path, body, transport, signal);
        return this.read(what, a, transport);
      },
      policy,
      { signal, onRetry: (i) => this.o.logger?.warn({ what, attempt: i.attemptNumber, waitMs: i.waitMs, reason: i.error.message }, 'odoo: retrying') },
    );
  }

  private async post(what: string, path: string, body: unknown, transport: Transport, signal?: AbortSignal): Promise<Answer> {
    const deadline = AbortSignal.timeout(this.settings.requestTimeoutMs);
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'collections-sync' };
    if (body !== undefined) headers['content-type'] = 'application/json; charset=utf-8';
    if (transport === 'json2' && path.startsWith('/json/2/')) {
      headers['authorization'] = `bearer ${this.o.apiKey.reveal()}`;
      headers['x-odoo-database'] = this.o.database;
    }
    this.requests += 1;
    try {
      const res = await request(`${this.base}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        dispatcher: this.o.dispatcher,
        headers,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: signal ? AbortSignal.any([signal, deadline]) : deadline,
      });
      const type = res.headers['content-type'];
      return { status: res.statusCode, type: (Array.isArray(type) ? type[0] : type) ?? '', text: await res.body.text() };
    } catch (err) {
      if (signal?.aborted) throw err;
      throw new PlatformError('PLATFORM_UNAVAILABLE', `odoo: ${what} failed (${errorName(err)})`, true, { cause: err });
    }
  }

  /** An answer read by its transport's rules. */
  private read(what: string, a: Answer, transport: Transport): unknown {
    const json = a.type.includes('json') ? parseJson(a.text) : undefined;
    if (a.status >= 500 && odooErrorSchema.safeParse(json).success) return this.fail(what, odooErrorSchema.parse(json), a.status);
    if (a.status >= 500 || a.status === 429 || a.status === 408) return this.unavailable(what, `answered ${a.status}${json === undefined ? ' (not Odoo: its proxy)' : ''}`);
    if (a.status === 401) return this.thrown(this.refused(`${what} answered 401 ${odooErrorSchema.safeParse(json).data?.message ?? ''}`.trim()));
    if (a.status === 404) {
      // The first call of every adapter reads res.company, which every database has: its 404 is the database's.
      if (transport === 'json2' && what.startsWith('res.company.')) return this.thrown(this.missingDatabase(`${what} answered 404`));
      if (transport === 'json2' && what !== 'GET /web/version') return this.thrown(new PlatformError('PLATFORM_BAD_RESPONSE', `odoo: ${what} answered 404 at ${this.base}: is the Invoicing (account) app installed in database "${this.o.database}"?`, false));
      return this.thrown(new PlatformError('PLATFORM_BAD_RESPONSE', `odoo: ${what} answered 404 at ${this.base}`, false));
    }
    if (a.status !== 200) {
      const e = odooErrorSchema.safeParse(json);
      if (e.success) return this.fail(what, e.data, a.status);
      return this.thrown(new PlatformError('PLATFORM_BAD_RESPONSE', `odoo: ${what} answered ${a.status}`, false));
    }
    if (json === undefined) return this.unavailable(what, 'answered 200 with a body that is not JSON (not Odoo: its proxy?)');
    if (transport === 'json2') return json;
    const rpc = jsonRpcAnswerSchema.safeParse(json);
    if (!rpc.success) return this.thrown(new PlatformError('PLATFORM_BAD_RESPONSE', `odoo: ${what} answered JSON that is not JSON-RPC`, false));
    if ('error' in rpc.data && rpc.data.error !== undefined) {
      const e = rpc.data.error;
      return this.fail(what, e.data ?? { name: 'unknown', message: e.message }, 200);
    }
    return rpc.data.result;
  }

  /** An error Odoo named: a refused key, a missing database, or our request's fault (for good, with Odoo's message). */
  private fail(what: string, e: OdooError, status: number): never {
    const message = this.scrub(e.message ?? '');
    if (e.name === 'odoo.exceptions.AccessDenied' || /Invalid apikey/i.test(message)) throw this.refused(`${what}: ${e.name}: ${message}`);
    if (/database "?[^"\s]*"? does not exist/i.test(message) || e.name === 'odoo.exceptions.DatabaseNotFound') throw this.missingDatabase(`${what}: ${message}`);
    throw new PlatformError('PLATFORM_BAD_RESPONSE', `odoo: ${what} failed${status !== 200 ? ` (${status})` : ''}: ${e.name}: ${message.slice(0, 500)}`, false);
  }

  refused(detail: string): PlatformError {
    return new PlatformError(
      'PLATFORM_AUTH_FAILED',
      `odoo: the API key of ${this.o.username} on database "${this.o.database}" was refused (${this.scrub(detail)}): it needs a new key (expired, revoked, or the user archived): make one in Odoo (Preferences, Account Security, New API Key) and put it in the tenant's apiKey (docs/odoo.md, "Rotating the API key")`,
      false,
    );
  }

  private missingDatabase(detail: string): PlatformError {
    return new PlatformError('PLATFORM_BAD_RESPONSE', `odoo: the database "${this.o.database}" does not exist at ${this.base} (${detail}): check the tenant's database`, false);
  }

  private unavailable(what: string, detail: string): never {
    throw new PlatformError('PLATFORM_UNAVAILABLE', `odoo: ${what} ${detail}`, true);
  }

  private thrown(err: PlatformError): never {
    throw err;
  }

  /** Odoo's messages never carry our key, but a message is made safe anyway before it reaches a log or a run. */
  private scrub(s: string): string {
    const key = this.o.apiKey.reveal();
    return key.length > 0 ? s.split(key).join('[redacted]') : s;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
