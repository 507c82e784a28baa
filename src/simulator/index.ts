/**
 * The collections-service simulator: a faithful in-memory implementation of collections-api.md on node:http, with
 * fault injection and counters, for the tests, the demo and the benchmark. API: notes/simulator-api.md.
 */
export { startSimulator } from './server.js';
export { DEFAULT_FAULTS, faultSettingsSchema } from './faults.js';
export { DEFAULT_TEMPLATE } from './templates.js';
export { ROUTES } from './routes/table.js';
export type {
  FaultSettings,
  ScriptEntry,
  ScriptFault,
  SeedPayment,
  Simulator,
  SimulatorCounters,
  SimulatorData,
  SimulatorOptions,
  StoredCall,
} from './types.js';

/** `"id:secret,id2:secret2"` -> clients (the secret is everything after the first colon; ids and secrets non-empty). */
export function parseClientsArg(arg: string): Array<{ clientId: string; clientSecret: string }> {
  const clients = arg
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((pair) => {
      const i = pair.indexOf(':');
      const clientId = i > 0 ? pair.slice(0, i).trim() : '';
      const clientSecret = i > 0 ? pair.slice(i + 1) : '';
      if (clientId === '' || clientSecret === '') {
        throw new Error('--clients expects id:secret pairs separated by commas (e.g. "acme:s3cret,globex:hunter2")');
      }
      return { clientId, clientSecret };
    });
  if (clients.length === 0) throw new Error('--clients needs at least one id:secret pair');
  return clients;
}
