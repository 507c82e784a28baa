/**
 * The connect room (issue 30): connect links, the OAuth authorization-code flow of every OAuth platform, the
 * customer's pages, and the connection state of every OAuth tenant (`connect status`, metrics). It writes refresh
 * tokens only through the token chain (src/platforms/oauth: PlatformAuth.connect) and requests runs through the
 * producers; routes are mounted on the public server by src/webhooks/index.ts.
 */
export { Connect, makeConnectLink, LinkRefusedError, CALLBACK_PATH, type ConnectDeps, type ConnectAnswer, type ConnectionChange, type LinkOptions, type MadeLink } from './connect.js';
export { LinkStore, LINK_ID, MAX_LINK_MS, type LinkRecord } from './links.js';
export { mountConnectRoutes, type ConnectRoutesOptions } from './routes.js';
export { Capabilities } from './capability.js';
export { connectionStates, connectionOf, connectionsOf, hasConnection, type ConnectionReport, type ConnectionState } from './status.js';
export { revokeConnection, type RevokeOutcome } from './revoke.js';
