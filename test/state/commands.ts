/**
 * Counts the commands one client sends, with MONITOR filtered to that client's address (commands run
 * inside Lua show as `lua` and are left out). One command per call means one round trip per call.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

export interface CommandCounter {
  /** Runs `fn` and returns the commands (name and first key) the watched client sent meanwhile. */
  during(fn: () => Promise<unknown>): Promise<string[]>;
  close(): Promise<void>;
}

export async function watchCommands(url: string, client: Redis): Promise<CommandCounter> {
  const info = String(await client.call('CLIENT', 'INFO'));
  const addr = /(?:^|\s)addr=(\S+)/.exec(info)?.[1];
  if (!addr) throw new Error(`no addr in CLIENT INFO: ${info}`);
  const base = new Redis(url);
  const monitor = await base.monitor();
  let seen: string[][] = [];
  const waiters = new Map<string, () => void>();
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (source !== addr) return;
    if (args[0]?.toLowerCase() === 'echo' && args[1] !== undefined && waiters.has(args[1])) {
      waiters.get(args[1])?.();
      return;
    }
    seen.push(args);
  });
  const mark = async (): Promise<void> => {
    const marker = `mark-${randomBytes(6).toString('hex')}`;
    const arrived = new Promise<void>((resolve) => waiters.set(marker, resolve));
    await client.echo(marker);
    await arrived;
    waiters.delete(marker);
  };
  await mark();
  return {
    async during(fn) {
      await mark();
      seen = [];
      await fn();
      await mark();
      return seen.map((a) => `${(a[0] ?? '').toUpperCase()}${a[0]?.toLowerCase().startsWith('eval') ? ` keys=${a[2]}` : ` ${a[1] ?? ''}`}`);
    },
    async close() {
      monitor.disconnect();
      base.disconnect(); // else it reconnects, and logs errors, once the server is stopped
    },
  };
}
