/**
 * A double of Intuit's OAuth 2.0 token endpoint for QuickBooks Online (node:http on 127.0.0.1, port 0), its answers
 * shaped by the SDK's own examples (test/fixtures/quickbooks/oauth/: field names and types, `expires_in` 3600).
 *
 * - `POST /oauth2/v1/tokens/bearer` with HTTP Basic client id and secret, a form body `grant_type=refresh_token`
 *   and `refresh_token`; anything else is `invalid_client` (401) or `invalid_request` (400).
 * - Refresh tokens rotate strictly: each works once; used again, or revoked, it is `invalid_grant` (400).
 * - Access tokens live `accessTtlS` (3600 by default); `GET /v3/company/<realmId>/companyinfo/<realmId>` stands for
 *   any API call: 200 with a valid Bearer token, else 401 (AuthenticationFault), so tests can use what they get.
 * - `onAccess` tells an API double (test/platforms/quickbooks/double.ts) which access tokens to accept.
 * Every token call is recorded with its outcome (token-endpoint.ts), so tests can count the uses of each refresh
 * token; `revokeAll()` (the company disconnected the app) stops every refresh token.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { OAuthPlatformDouble } from './oauth-platform.js';
import { TokenEndpointBook } from './token-endpoint.js';
import { closeServer } from '../../src/http-server.js';

const FIXTURES = new URL('../fixtures/quickbooks/oauth/', import.meta.url);

/** The SDK's example answers, read once: the double answers in their shape. */
const successShape = z.strictObject({
  token_type: z.string(),
  expires_in: z.number().int(),
  refresh_token: z.string(),
  x_refresh_token_expires_in: z.number().int(),
  access_token: z.string(),
  id_token: z.string(),
});
const failureShape = z.strictObject({ error: z.string(), error_description: z.string() });
const SUCCESS = successShape.parse(JSON.parse(readFileSync(new URL('success_refreshtoken_response.json', FIXTURES), 'utf8')));
failureShape.parse(JSON.parse(readFileSync(new URL('failure_token_response.json', FIXTURES), 'utf8')));

export const QBO_TOKEN_PATH = '/oauth2/v1/tokens/bearer';

export interface QuickBooksOAuthOptions {
  clientId: string;
  clientSecret: string;
  realmId: string;
  /** Access token lifetime (expires_in), seconds. Default: the fixture's (3600). */
  accessTtlS?: number;
  /** Delay before the token endpoint answers (widens race windows). */
  tokenDelayMs?: number;
  /** Told of each access token issued (an API double accepts it). */
  onAccess?: (token: string) => void;
}

export interface QboTokenCall {
  token: string;
  outcome: 'issued' | 'invalid_grant' | 'invalid_client' | 'invalid_request';
  at: number;
}

export class QuickBooksOAuthDouble extends TokenEndpointBook<QboTokenCall['outcome']> {
  /** API calls (`companyinfo`) with their status. */
  readonly apiCalls: { token: string; status: number }[] = [];
  tokenUrl = '';
  apiUrl = '';
  authorizeUrl = '';
  revokeUrl = '';
  /** The authorization side (connect links), once `enableConnect` was called. */
  oauth: OAuthPlatformDouble | undefined;
  private server: Server | undefined;

  private constructor(readonly options: QuickBooksOAuthOptions) {
    super(() => `AB11${randomBytes(24).toString('base64url')}`);
  }

  static async start(options: QuickBooksOAuthOptions): Promise<QuickBooksOAuthDouble> {
    const double = new QuickBooksOAuthDouble(options);
    const server = createServer((req, res) => {
      double.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) reply(res, 500, { error: 'server_error', error_description: String(err) });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    double.server = server;
    double.tokenUrl = `http://127.0.0.1:${port}${QBO_TOKEN_PATH}`;
    double.apiUrl = `http://127.0.0.1:${port}`;
    double.authorizeUrl = `http://127.0.0.1:${port}/authorize`;
    double.revokeUrl = `http://127.0.0.1:${port}/revoke`;
    return double;
  }

  /** Serves the authorization code flow: consent picks `realmId` (default the double's); `redirectUri` is the registered one. */
  enableConnect(o: { redirectUri: string; realmId?: string }): OAuthPlatformDouble {
    this.oauth = new OAuthPlatformDouble({
      clientId: this.options.clientId,
      clientSecret: this.options.clientSecret,
      redirectUri: o.redirectUri,
      allowedScopes: ['com.intuit.quickbooks.accounting', 'openid'],
      pkce: 'ignored',
      realmId: o.realmId ?? this.options.realmId,
      issueGrant: () => {
        const grant = this.issueGrant(this.options.accessTtlS ?? SUCCESS.expires_in, `eyJ${randomBytes(24).toString('base64url')}`);
        this.options.onAccess?.(grant.accessToken);
        return grant;
      },
      isAccessValid: (t) => this.isAccessValid(t),
      revokeAll: () => this.revokeAll(),
    });
    return this.oauth;
  }

  async close(): Promise<void> {
    if (this.server) await closeServer(this.server);
  }

  /** Whether an API double should accept this access token now. */
  accepts(token: string): boolean {
    const until = this.access.get(token);
    return until !== undefined && until > Date.now();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://double');
    if (this.oauth && (await this.oauth.handle(req, res, url))) return;
    if (req.method === 'POST' && url.pathname === QBO_TOKEN_PATH) return this.token(req, res);
    const realm = this.options.realmId;
    if (req.method === 'GET' && url.pathname === `/v3/company/${realm}/companyinfo/${realm}`) {
      const token = /^Bearer (\S+)$/.exec(req.headers['authorization'] ?? '')?.[1] ?? '';
      const status = this.accepts(token) ? 200 : 401;
      this.apiCalls.push({ token, status });
      if (status === 401) {
        return reply(res, 401, { Fault: { Error: [{ Message: 'message=AuthenticationFailed; errorCode=003200; statusCode=401', code: '3200' }], type: 'AUTHENTICATION' } });
      }
      return reply(res, 200, { CompanyInfo: { Id: realm, CompanyName: 'Double Co' } });
    }
    reply(res, 404, { error: 'not_found' });
  }

  private async token(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
    if (this.oauth && form.get('grant_type') === 'authorization_code') return this.oauth.exchange(req, res, form);
    if (this.options.tokenDelayMs) await new Promise((r) => setTimeout(r, this.options.tokenDelayMs));
    const token = form.get('refresh_token') ?? '';
    const now = Date.now();
    const basic = `Basic ${Buffer.from(`${this.options.clientId}:${this.options.clientSecret}`, 'utf8').toString('base64')}`;
    const fail = (status: number, outcome: Exclude<QboTokenCall['outcome'], 'issued'>, description: string): void => {
      this.tokenCalls.push({ token, outcome, at: now });
      reply(res, status, { error: outcome, error_description: description });
    };
    if (req.headers['authorization'] !== basic) return fail(401, 'invalid_client', 'Client authentication failed');
    if (!(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) return fail(400, 'invalid_request', 'form body expected');
    if (form.get('grant_type') !== 'refresh_token' || token === '') return fail(400, 'invalid_request', 'grant_type=refresh_token and refresh_token expected');
    const rec = this.refresh.get(token);
    if (!rec || rec.revoked || rec.usedAt !== undefined) return fail(400, 'invalid_grant', 'Incorrect or invalid refresh token');
    rec.usedAt = now;
    this.tokenCalls.push({ token, outcome: 'issued', at: now });
    const next = this.issueRefreshToken();
    const accessToken = `eyJ${randomBytes(24).toString('base64url')}`;
    const ttl = this.options.accessTtlS ?? SUCCESS.expires_in;
    this.issueAccess(accessToken, now, ttl);
    this.options.onAccess?.(accessToken);
    reply(res, 200, { ...SUCCESS, expires_in: ttl, refresh_token: next, access_token: accessToken, id_token: `eyJ${randomBytes(12).toString('base64url')}` });
  }
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), intuit_tid: `1-${randomBytes(8).toString('hex')}` });
  res.end(text);
}
