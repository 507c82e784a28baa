import type { Command } from 'commander';
import { createMetrics } from '../../ops/metrics.js';
import { parseClientsArg, startSimulator } from '../../simulator/index.js';
import { startWorker } from '../../worker.js';
import { openRuntime, out, UsageError } from '../runtime.js';

/** Resolves on the first SIGTERM or SIGINT. */
function untilSignal(): Promise<string> {
  return new Promise((resolve) => {
    const on = (sig: string) => () => resolve(sig);
    process.once('SIGTERM', on('SIGTERM'));
    process.once('SIGINT', on('SIGINT'));
  });
}

export function registerServe(program: Command): void {
  program
    .command('worker')
    .description('the always-on worker: sync runs, schedules, token rotations, and /healthz, /readyz, /metrics on OPS_PORT')
    .option('--concurrency <n>', 'sync jobs at once in this process (default WORKER_CONCURRENCY)')
    .option('--ops-host <host>', 'address of the ops port', '127.0.0.1')
    .action(async (o: { concurrency?: string; opsHost: string }) => {
      const concurrency = o.concurrency === undefined ? undefined : Number(o.concurrency);
      if (concurrency !== undefined && (!Number.isInteger(concurrency) || concurrency < 1)) throw new UsageError('--concurrency must be a positive whole number');
      // Listen first: a SIGTERM that comes while the worker starts (Redis still coming up, say) is not lost to
      // Node's default handler, which would end the process by the signal; the worker stops once started.
      const signalled = untilSignal();
      const metrics = createMetrics();
      const rt = await openRuntime('worker', { metrics });
      const worker = await startWorker(rt.app, {
        tenantsFile: rt.env.TENANTS_FILE,
        opsHost: o.opsHost,
        ...(concurrency ? { concurrency } : {}),
      });
      rt.app.logger.info({ tenants: rt.app.tenants().map((t) => t.id), ops: worker.ops?.port }, 'worker started');
      const sig = await signalled;
      rt.app.logger.info({ signal: sig }, 'shutting down');
      await worker.close(rt.env.SHUTDOWN_TIMEOUT_MS);
      await rt.close();
      rt.app.logger.info('stopped');
    });

  program
    .command('simulator')
    .description('run the local collections-service simulator (for trying the worker without credentials)')
    .option('--port <port>', 'port (0 = random)', '4010')
    .option('--host <host>', 'address', '127.0.0.1')
    .option('--clients <list>', 'id:secret,id:secret', 'demo:demo-secret')
    .option('--latency <ms>', 'added latency per request', '0')
    .option('--token-lifetime <seconds>', 'token lifetime', '300')
    .action(async (o: { port: string; host: string; clients: string; latency: string; tokenLifetime: string }) => {
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
    });
}
