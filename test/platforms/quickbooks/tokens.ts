/**
 * A minimal Intuit token endpoint for the end-to-end test (POST /oauth2/v1/tokens/bearer, refresh_token grant,
 * Basic client authentication): each refresh token works once and is replaced by a new one; each access token it
 * issues is accepted by the QuickBooks double. The OAuth room's own tests cover rotation races in depth.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { QboDouble } from './double.js';

export interface QboTokens {
  clientId: string;
  clientSecret: string;
  tokenUrl: string;
  issueRefreshToken(): string;
  refreshes: number;
  /** Every refresh and access token issued. */
  issued: string[];
  close(): Promise<void>;
}

export async function startQboTokens(double: QboDouble): Promise<QboTokens> {
  const clientId = 'ABqbo-client-1';
  const clientSecret = 'qbo-secret-1';
  const live = new Set<string>();
  const issue = (): string => {
    const t = `AB11${randomBytes(20).toString('hex')}`;
    live.add(t);
    out.issued.push(t);
    return t;
  };
  const out: QboTokens = { clientId, clientSecret, tokenUrl: '', issueRefreshToken: issue, refreshes: 0, issued: [], close: async () => undefined };
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const send = (status: number, json: unknown): void => {
        res.writeHead(status, { 'content-type': 'application/json', intuit_tid: `1-${randomBytes(6).toString('hex')}` });
        res.end(JSON.stringify(json));
      };
      const basic = `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`;
      if (req.method !== 'POST' || !req.url?.startsWith('/oauth2/v1/tokens/bearer')) return send(404, { error: 'not_found' });
      if (req.headers.authorization !== basic) return send(401, { error: 'invalid_client' });
      const form = new URLSearchParams(body);
      const token = form.get('refresh_token') ?? '';
      if (form.get('grant_type') !== 'refresh_token' || !live.delete(token)) return send(400, { error: 'invalid_grant' });
      out.refreshes += 1;
      const access = `eyJqbo.${randomBytes(24).toString('base64url')}`;
      double.acceptToken(access);
      out.issued.push(access);
      send(200, { token_type: 'bearer', expires_in: 3600, refresh_token: issue(), x_refresh_token_expires_in: 8_726_400, access_token: access });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  out.tokenUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/oauth2/v1/tokens/bearer`;
  out.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return out;
}
