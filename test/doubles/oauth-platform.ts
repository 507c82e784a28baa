/**
 * The authorization-code side of an OAuth platform double, shared by the Xero double (test/platforms/xero/fake-xero.ts)
 * and the QuickBooks one (quickbooks-oauth.ts); the token bookkeeping stays theirs (token-endpoint.ts).
 *
 * - `GET /authorize`: checks client_id, response_type=code, the registered redirect URI (exactly), the scopes the
 *   app may ask for (else `invalid_scope`, as Xero does), and PKCE S256 when the platform requires it; then
 *   consents at once (a browser following the redirect lands on the callback with `code` and `state`, plus
 *   `realmId` for Intuit), or answers `error=access_denied` when `deny()` was called.
 * - The token endpoint's `grant_type=authorization_code` (the host passes it here): Basic client auth, the code
 *   unused and unexpired (60 s), the same redirect URI, the PKCE verifier matching the challenge. A code is good
 *   once: a second exchange is `invalid_grant`.
 * - Xero: `GET /connections` (Bearer) lists the organisations granted; `DELETE /connections/{id}` disconnects one.
 * - Intuit: `POST /revoke` (Basic, JSON `{token}`) revokes the grant.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface Organisation {
  tenantId: string;
  name: string;
}

export interface OAuthPlatformOptions {
  clientId: string;
  clientSecret: string;
  /** The redirect URI registered in the developer portal. */
  redirectUri: string;
  /** Scopes the app may ask for. */
  allowedScopes: readonly string[];
  pkce: 'required' | 'ignored';
  /** Xero: the organisations a consent grants. */
  organisations?: Organisation[];
  /** Intuit: the company the consent picks (the callback's realmId). */
  realmId?: string;
  /** Issues the grant's tokens in the host's book. */
  issueGrant(): { refreshToken: string; accessToken: string; expiresInS: number };
  isAccessValid(token: string): boolean;
  /** The host revokes every refresh token of the grant. */
  revokeAll(): void;
}

interface Code {
  redirectUri: string;
  challenge?: string;
  used: boolean;
  at: number;
}

export interface Connection {
  id: string;
  tenantId: string;
  tenantName: string;
  tenantType: 'ORGANISATION';
}

export class OAuthPlatformDouble {
  /** Every consent screen shown, with what it answered: `granted` or the error. */
  readonly consents: { outcome: string; scope: string }[] = [];
  readonly exchanges: { outcome: 'issued' | 'invalid_grant' | 'invalid_client' | 'invalid_request' }[] = [];
  /** Xero: connections live (granted and not deleted). */
  readonly connections: Connection[] = [];
  readonly revocations: string[] = [];
  private readonly codes = new Map<string, Code>();
  private denyNext: string | undefined;

  constructor(readonly options: OAuthPlatformOptions) {}

  /** The next consent answers `error` (default access_denied). */
  deny(error = 'access_denied'): void {
    this.denyNext = error;
  }

  /** Handles the paths of this side; false when `url` is not one of them. */
  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
    if (req.method === 'GET' && url.pathname === '/authorize') return this.authorize(url, res), true;
    if (this.options.organisations && url.pathname === '/connections' && req.method === 'GET') return this.list(req, res), true;
    const del = /^\/connections\/([^/]+)$/.exec(url.pathname);
    if (this.options.organisations && del && req.method === 'DELETE') return this.disconnect(req, res, decodeURIComponent(del[1]!)), true;
    if (url.pathname === '/revoke' && req.method === 'POST') return await this.revoke(req, res), true;
    return false;
  }

  private authorize(url: URL, res: ServerResponse): void {
    const q = url.searchParams;
    const o = this.options;
    // What the platform shows as an error page, not a redirect: the client or the redirect URI is wrong.
    if (q.get('client_id') !== o.clientId || q.get('redirect_uri') !== o.redirectUri) return send(res, 400, { error: 'invalid_request', detail: 'unknown client or unregistered redirect_uri' });
    const back = new URL(o.redirectUri);
    const state = q.get('state');
    if (state !== null) back.searchParams.set('state', state);
    const scope = q.get('scope') ?? '';
    const fail = (error: string): void => {
      this.consents.push({ outcome: error, scope });
      back.searchParams.set('error', error);
      redirect(res, back.href);
    };
    if (q.get('response_type') !== 'code') return fail('unsupported_response_type');
    if (scope.split(' ').some((s) => !o.allowedScopes.includes(s))) return fail('invalid_scope');
    const challenge = q.get('code_challenge') ?? undefined;
    if (o.pkce === 'required' && (challenge === undefined || q.get('code_challenge_method') !== 'S256')) return fail('invalid_request');
    if (this.denyNext !== undefined) {
      const error = this.denyNext;
      this.denyNext = undefined;
      return fail(error);
    }
    this.consents.push({ outcome: 'granted', scope });
    const code = randomBytes(16).toString('hex');
    this.codes.set(code, { redirectUri: o.redirectUri, ...(o.pkce === 'required' && challenge ? { challenge } : {}), used: false, at: Date.now() });
    back.searchParams.set('code', code);
    if (o.realmId !== undefined) back.searchParams.set('realmId', o.realmId);
    redirect(res, back.href);
  }

  /** The token endpoint's authorization_code grant (the host read the form). */
  exchange(req: IncomingMessage, res: ServerResponse, form: URLSearchParams): void {
    const o = this.options;
    const basic = `Basic ${Buffer.from(`${o.clientId}:${o.clientSecret}`, 'utf8').toString('base64')}`;
    const fail = (status: number, outcome: 'invalid_grant' | 'invalid_client' | 'invalid_request'): void => {
      this.exchanges.push({ outcome });
      send(res, status, { error: outcome });
    };
    if (req.headers['authorization'] !== basic) return fail(401, 'invalid_client');
    const code = this.codes.get(form.get('code') ?? '');
    if (code === undefined || code.used || Date.now() - code.at > 60_000) return fail(400, 'invalid_grant');
    code.used = true;
    if (form.get('redirect_uri') !== code.redirectUri) return fail(400, 'invalid_grant');
    if (code.challenge !== undefined) {
      const verifier = form.get('code_verifier') ?? '';
      if (createHash('sha256').update(verifier).digest('base64url') !== code.challenge) return fail(400, 'invalid_grant');
    }
    const grant = o.issueGrant();
    for (const org of o.organisations ?? []) {
      if (!this.connections.some((c) => c.tenantId === org.tenantId)) this.connections.push({ id: randomUUID(), tenantId: org.tenantId, tenantName: org.name, tenantType: 'ORGANISATION' });
    }
    this.exchanges.push({ outcome: 'issued' });
    send(res, 200, { access_token: grant.accessToken, refresh_token: grant.refreshToken, expires_in: grant.expiresInS, token_type: 'Bearer' });
  }

  private bearerOk(req: IncomingMessage): boolean {
    const token = /^Bearer (\S+)$/.exec(req.headers['authorization'] ?? '')?.[1];
    return token !== undefined && this.options.isAccessValid(token);
  }

  private list(req: IncomingMessage, res: ServerResponse): void {
    if (!this.bearerOk(req)) return send(res, 401, { title: 'Unauthorized' });
    send(res, 200, this.connections);
  }

  private disconnect(req: IncomingMessage, res: ServerResponse, id: string): void {
    if (!this.bearerOk(req)) return send(res, 401, { title: 'Unauthorized' });
    const i = this.connections.findIndex((c) => c.id === id);
    if (i < 0) return send(res, 404, { title: 'Not Found' });
    this.connections.splice(i, 1);
    this.revocations.push(id);
    if (this.connections.length === 0) this.options.revokeAll();
    res.writeHead(204).end();
  }

  private async revoke(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const o = this.options;
    const basic = `Basic ${Buffer.from(`${o.clientId}:${o.clientSecret}`, 'utf8').toString('base64')}`;
    if (req.headers['authorization'] !== basic) return send(res, 401, { error: 'invalid_client' });
    const token = (JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { token?: string }).token;
    if (!token) return send(res, 400, { error: 'invalid_request' });
    this.revocations.push('grant');
    o.revokeAll();
    res.writeHead(200).end();
  }
}

function redirect(res: ServerResponse, location: string): void {
  res.writeHead(302, { location }).end();
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'xero-correlation-id': randomUUID(), intuit_tid: `1-${randomBytes(8).toString('hex')}` });
  res.end(text);
}
