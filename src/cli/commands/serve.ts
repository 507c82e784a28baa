import type { Command } from 'commander';
import { untilSignal } from '../runtime.js';

const actions = () => import('../actions/serve.js');

export function registerServe(program: Command): void {
  program
    .command('worker')
    .description('the always-on worker: sync runs, schedules, token rotations, and /healthz, /readyz, /metrics on OPS_PORT')
    .option('--concurrency <n>', 'sync jobs at once in this process (default WORKER_CONCURRENCY)')
    .option('--ops-host <host>', 'address of the ops port', '127.0.0.1')
    .action(async (o: { concurrency?: string; opsHost: string }) => {
      // Listen first: a SIGTERM that comes while the worker starts (its modules loading, Redis still coming up)
      // is not lost to Node's default handler, which would end the process by the signal; the worker stops once started.
      const signalled = untilSignal();
      return (await actions()).worker(o, signalled);
    });

  program
    .command('simulator')
    .description('run the local collections-service simulator (for trying the worker without credentials)')
    .option('--port <port>', 'port (0 = random)', '4010')
    .option('--host <host>', 'address', '127.0.0.1')
    .option('--clients <list>', 'id:secret,id:secret', 'demo:demo-secret')
    .option('--latency <ms>', 'added latency per request', '0')
    .option('--token-lifetime <seconds>', 'token lifetime', '300')
    .action(async (o: { port: string; host: string; clients: string; latency: string; tokenLifetime: string }) => (await actions()).simulator(o));
}
