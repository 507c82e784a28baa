/**
 * The connect room (issue 30): connect links, the OAuth authorization-code flows of Xero and QuickBooks, the
 * customer's pages, and the connection state of every OAuth tenant (`connect status`, metrics). It writes refresh
 * tokens only through the token chain (src/platforms/oauth: PlatformAuth.connect) and requests runs through the
 * producers; routes are mounted on the public server by src/webhooks/index.ts.
 */
export { Connect, connectLink, CALLBACK_PATH, type ConnectDeps, type ConnectAnswer, type ConnectionChange } from './connect.js';
export { mountConnectRoutes, type ConnectRoutesOptions } from './routes.js';
export { Capabilities } from './capability.js';
export { connectionStates, connectionOf, connectionsOf, IDLE_LIMIT_DAYS, type ConnectionReport, type ConnectionState } from './status.js';
export { revokeConnection, type RevokeOutcome } from './revoke.js';
