/** `worker` and `simulator`: what runs (the commands are in ../commands/serve.ts). */
import { loadEnv } from '../../config/env.js';
import { createLogger, type Logger } from '../../logger.js';
import { createMetrics } from '../../ops/metrics.js';
import { parseClientsArg, startSimulator } from '../../simulator/index.js';
import { startWorker, type RunningWorker } from '../../worker.js';
import { openRuntime, out, untilSignal, UsageError, type Runtime } from '../runtime.js';

/** How long the closing of queues, pools and connections may take after the workers' own deadline. */
export const SHUTDOWN_GRACE_MS = 5_000;

/**
 * `signalled`: the first SIGTERM or SIGINT, listened for before this module was loaded. A signal while the worker
 * starts (Redis still coming up, say) stops it once started, or ends the process when the bound passes first.
 * Ends the process itself once its last line is written (a connection may still be retrying when Redis is down).
 */
export async function worker(o: { concurrency?: string; opsHost: string }, signalled: Promise<string>): Promise<void> {
  const concurrency = o.concurrency === undefined ? undefined : Number(o.concurrency);
  if (concurrency !== undefined && (!Number.isInteger(concurrency) || concurrency < 1)) throw new UsageError('--concurrency must be a positive whole number');
  const env = loadEnv();
  const boundMs = env.SHUTDOWN_TIMEOUT_MS + SHUTDOWN_GRACE_MS;
  const started = (async () => {
    const rt = await openRuntime('worker', { metrics: createMetrics() });
    try {
      const w = await startWorker(rt.app, {
        tenantsFile: rt.env.TENANTS_FILE,
        opsHost: o.opsHost,
        ...(concurrency ? { concurrency } : {}),
      });
      rt.app.logger.info({ tenants: rt.app.tenants().map((t) => t.id), ops: w.ops?.port }, 'worker started');
      return { rt, w };
    } catch (err) {
      await Promise.race([rt.close(), sleep(SHUTDOWN_GRACE_MS)]);
      throw err;
    }
  })();
  const first = await Promise.race([started, signalled]);
  let code: number;
  if (typeof first === 'string') {
    // A signal while starting: stop once started, or give up when the bound passes.
    const deadline = Date.now() + boundMs;
    const ready = await Promise.race([started, sleep(boundMs).then(() => undefined)]);
    if (ready === undefined) {
      const logger = createLogger({ level: env.LOG_LEVEL, format: env.LOG_FORMAT });
      logger.error({ signal: first }, `stopped: ${first} came while the worker was starting and it had not started within ${boundMs} ms (Redis unreachable?); forced exit`);
      await flushed(logger);
      process.exit(1);
    }
    code = await stopWithin(ready.rt, ready.w, first, deadline);
  } else {
    const sig = await signalled;
    code = await stopWithin(first.rt, first.w, sig, Date.now() + boundMs);
  }
  process.exit(code);
}

/**
 * The ordered shutdown under a hard bound: workers get SHUTDOWN_TIMEOUT_MS (then are forced), the rest gets
 * SHUTDOWN_GRACE_MS more. Whatever Redis does, the process then exits, and the last line says how it stopped.
 * A second signal ends it at once. Returns the exit code (0 clean, 1 forced).
 */
async function stopWithin(rt: Runtime, worker: RunningWorker, sig: string, deadline: number): Promise<number> {
  const { logger } = rt.app;
  const boundMs = Math.max(0, deadline - Date.now());
  const workersMs = Math.max(0, Math.min(rt.env.SHUTDOWN_TIMEOUT_MS, boundMs - SHUTDOWN_GRACE_MS));
  logger.info({ signal: sig, deadlineMs: workersMs }, 'shutting down');
  const forced = (why: string): void => {
    logger.error({ redis: rt.app.redis.status }, `stopped: ${why}; forced exit (unfinished jobs are picked up again by the next worker)`);
  };
  const again = untilSignal().then((second) => {
    forced(`a second ${second} came during shutdown`);
    return 1;
  });
  const clean = (async () => {
    await worker.close(workersMs);
    await rt.close();
    logger.info('stopped');
    return 0;
  })();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<number>((resolve) => {
    timer = setTimeout(() => {
      const redis = rt.app.redis.status === 'ready' ? '' : ', Redis unreachable';
      forced(`shutdown did not finish within ${boundMs} ms${redis}`);
      resolve(1);
    }, boundMs);
  });
  const code = await Promise.race([clean, late, again]);
  clearTimeout(timer);
  await flushed(logger);
  return code;
}

/** Waits (at most a second) until the logger has written its lines. */
function flushed(logger: Logger): Promise<void> {
  return new Promise<void>((resolve) => {
    const t = setTimeout(resolve, 1_000);
    logger.flush(() => {
      clearTimeout(t);
      resolve();
    });
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

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
