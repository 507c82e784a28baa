/** POST /auth/v1/api-key/auth: {clientId, clientSecret} -> 200 {access_token}; wrong credentials -> 401. */
import { tokenRequestSchema } from '../../collections/schemas.js';
import type { Counters } from '../counters.js';
import { ApiError, parseJsonBody, validate, type Reply } from '../http.js';
import type { TokenAuthority } from '../tokens.js';

export function issueToken(tokens: TokenAuthority, counters: Counters, body: string): Reply {
  const { clientId, clientSecret } = validate(tokenRequestSchema, parseJsonBody(body), 'body');
  const issued = tokens.issue(clientId, clientSecret);
  if (!issued) throw new ApiError(401, 'Invalid client credentials', { reason: 'invalid_credentials' });
  counters.tokenIssued(clientId, issued.gen);
  return { status: 200, body: { access_token: issued.token } };
}
