/** `worker` and `simulator`: what runs (the commands are in ../commands/serve.ts). */
import { loadEnv } from '../../config/env.js';
import { createLogger, type Logger } from '../../logger.js';
import { createMetrics } from '../../ops/metrics.js';
import { parseClientsArg, startSimulator } from '../../simulator/index.js';
import { startWorker, type RunningWorker } from '../../worker.js';
import { StartAborted, startExitCode } from '../../worker/start-guard.js';
import { openRuntime, out, printable, untilSignal, UsageError, type Runtime } from '../runtime.js';
import { sleep } from '../../sleep.js';

/** How long the closing of queues, pools and connections may take after the workers' own deadline. */
export const SHUTDOWN_GRACE_MS = 5_000;

/**
 * `signalled`: the first SIGTERM or SIGINT, listened for before this module was loaded. Start and stop are total
 * (issue 28, decision 101): whatever happens the process ends itself once its last line is written (a connection
 * may still be retrying when Redis is down), with
 * - 2 when the start failed on a setting (a port taken, a bad setting), 1 on any other start failure (Redis
 *   unreachable after the wait), each with one line on stderr that names what to change;
 * - 0 when a signal came while starting: the start stops at its next step (the wait for Redis at once), closes what
 *   it opened, and nothing is left registered; 1 if that takes longer than the stop's bound or a second signal comes;
 * - once started, the ordered shutdown's code (stopWithin).
 */
export async function worker(o: { concurrency?: string; opsHost: string }, signalled: Promise<string>): Promise<void> {
  const concurrency = o.concurrency === undefined ? undefined : Number(o.concurrency);
  if (concurrency !== undefined && (!Number.isInteger(concurrency) || concurrency < 1)) throw new UsageError('--concurrency must be a positive whole number');
  const env = loadEnv();
  const boundMs = env.SHUTDOWN_TIMEOUT_MS + SHUTDOWN_GRACE_MS;
  const abort = new AbortController();
  void signalled.then((sig) => abort.abort(new StartAborted(sig)));
  const started = (async () => {
    const rt = await openRuntime('worker', { metrics: createMetrics(), signal: abort.signal });
    try {
      const w = await startWorker(rt.app, {
        tenantsFile: rt.env.TENANTS_FILE,
        opsHost: o.opsHost,
        ...(concurrency ? { concurrency } : {}),
        signal: abort.signal,
      });
      rt.app.logger.info({ tenants: rt.app.tenants().map((t) => t.id), ops: w.ops?.port }, 'worker started');
      return { rt, w };
    } catch (err) {
      await Promise.race([rt.close(), sleep(SHUTDOWN_GRACE_MS)]);
      throw err;
    }
  })();
  const start = await untilStarted(started, signalled, boundMs);
  if ('up' in start) {
    const sig = start.signal ?? (await signalled);
    process.exit(await stopWithin(start.up.rt, start.up.w, sig, start.deadline ?? Date.now() + boundMs));
  }
  const logger = createLogger({ level: env.LOG_LEVEL, format: env.LOG_FORMAT });
  if ('forced' in start) {
    logger.error({ signal: start.signal }, `stopped: ${start.forced}; forced exit`);
  } else if (start.failed instanceof StartAborted) {
    logger.info({ signal: start.failed.signal }, `stopped: ${start.failed.message}; it stopped before it took any job, and nothing of it is left running`);
  } else {
    process.stderr.write(`collections-sync: ${printable(start.failed instanceof Error ? start.failed.message : String(start.failed))}\n`);
  }
  await flushed(logger);
  process.exit('forced' in start ? 1 : startExitCode(start.failed));
}

type Started = { rt: Runtime; w: RunningWorker };
type StartOutcome =
  | { up: Started; signal?: string; deadline?: number }
  | { failed: unknown }
  | { forced: string; signal: string };

/**
 * The start's outcome: up (with the signal that came meanwhile, if one did, and the stop's deadline from it), failed
 * (an aborted start included), or forced: a signal came and the start did not end within the stop's bound, or a
 * second signal came.
 */
async function untilStarted(started: Promise<Started>, signalled: Promise<string>, boundMs: number): Promise<StartOutcome> {
  const settled = started.then(
    (up): StartOutcome => ({ up }),
    (err: unknown): StartOutcome => ({ failed: err }),
  );
  const first = await Promise.race([settled, signalled]);
  if (typeof first !== 'string') return first;
  const deadline = Date.now() + boundMs;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<StartOutcome>((resolve) => {
    timer = setTimeout(() => resolve({ forced: `${first} came while the worker was starting and the start did not end within ${boundMs} ms`, signal: first }), boundMs);
  });
  const again = untilSignal().then((second): StartOutcome => ({ forced: `a second ${second} came while the worker was starting`, signal: first }));
  const outcome = await Promise.race([settled, late, again]);
  clearTimeout(timer);
  return 'up' in outcome ? { ...outcome, signal: first, deadline } : outcome;
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
