/** `worker` and `simulator`: what runs (the commands are in ../commands/serve.ts). */
import { createMetrics } from '../../ops/metrics.js';
import { parseClientsArg, startSimulator } from '../../simulator/index.js';
import { startWorker } from '../../worker.js';
import { openRuntime, out, untilSignal, UsageError } from '../runtime.js';

/** `signalled`: the first SIGTERM or SIGINT, listened for before this module was loaded. */
export async function worker(o: { concurrency?: string; opsHost: string }, signalled: Promise<string>): Promise<void> {
  const concurrency = o.concurrency === undefined ? undefined : Number(o.concurrency);
  if (concurrency !== undefined && (!Number.isInteger(concurrency) || concurrency < 1)) throw new UsageError('--concurrency must be a positive whole number');
  const metrics = createMetrics();
  const rt = await openRuntime('worker', { metrics });
  const w = await startWorker(rt.app, {
    tenantsFile: rt.env.TENANTS_FILE,
    opsHost: o.opsHost,
    ...(concurrency ? { concurrency } : {}),
  });
  rt.app.logger.info({ tenants: rt.app.tenants().map((t) => t.id), ops: w.ops?.port }, 'worker started');
  const sig = await signalled;
  rt.app.logger.info({ signal: sig }, 'shutting down');
  await w.close(rt.env.SHUTDOWN_TIMEOUT_MS);
  await rt.close();
  rt.app.logger.info('stopped');
}

export async function simulator(o: { port: string; host: string; clients: string; latency: string; tokenLifetime: string }): Promise<void> {
  const port = Number(o.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError('--port must be 0-65535');
  const latencyMs = Number(o.latency);
  const lifetime = Number(o.tokenLifetime);
  if (!(latencyMs >= 0)) throw new UsageError('--latency must be a number of milliseconds >= 0');
  if (!(lifetime > 0)) throw new UsageError('--token-lifetime must be a positive number of seconds');
  let clients;
  try {
    clients = parseClientsArg(o.clients);
  } catch (err) {
    throw new UsageError(`--clients: ${(err as Error).message}`);
  }
  const sim = await startSimulator({ host: o.host, port, clients, tokenLifetimeMs: lifetime * 1000, faults: { latencyMs } });
  out(`simulator listening: COLLECTIONS_BASE_URL=${sim.baseUrl} COLLECTIONS_AUTH_URL=${sim.authUrl}`);
  out(`clients: ${clients.map((c) => c.clientId).join(', ')}; counters at ${sim.origin}/__sim/counters`);
  await untilSignal();
  await sim.close();
}
