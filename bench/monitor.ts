/**
 * Where Redis commands come from: MONITOR on the benchmark's Redis for the length of one run, every command
 * a worker sent (one round trip each, unless pipelined) counted by the kind of key it touches (`<prefix>:<kind>:...`:
 * auth = the token gate, ids = id maps and hashes, intents, cache = the record mirror, sync = the BullMQ queue, ...), and the
 * commands Lua scripts ran inside Redis counted apart. MONITOR slows Redis, so only counts come from here.
 */
import type { Redis } from 'ioredis';

export interface CommandSources {
  /** Commands sent by the workers, by key kind then command name. */
  sent: Record<string, Record<string, number>>;
  sentTotal: number;
  /** Commands run inside scripts. */
  inScripts: number;
}

function kindOf(args: string[]): string {
  const cmd = (args[0] ?? '').toLowerCase();
  let k: string | undefined;
  if (cmd === 'evalsha' || cmd === 'eval') k = Number(args[2]) > 0 ? args[3] : undefined;
  else k = args[1];
  if (k === undefined) return '(no key)';
  // `<base>:<kind>:{<owner>}...` (a queue's keys: `<base>:{<queue>}:...`), or the one-slot layout `{<base>}:<kind>:...`.
  const m = /^[^:]*:([^:]+)/.exec(k);
  const kind = m?.[1];
  if (kind === undefined) return '(other)';
  return kind.startsWith('{') ? `queue ${kind.slice(1, -1)}` : kind;
}

/** Starts counting; `stop()` ends MONITOR and returns the counts. Commands of `exclude` connections are left out. */
export async function monitorCommands(redis: Redis, exclude: Redis[]): Promise<{ stop(): Promise<CommandSources> }> {
  const excluded = new Set(exclude.map((r) => `127.0.0.1:${(r as unknown as { stream?: { localPort?: number } }).stream?.localPort ?? -1}`));
  const monitor = await redis.monitor();
  const out: CommandSources = { sent: {}, sentTotal: 0, inScripts: 0 };
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (source === 'lua') {
      out.inScripts += 1;
      return;
    }
    if (excluded.has(source)) return;
    const cmd = (args[0] ?? '?').toLowerCase();
    if (cmd === 'monitor') return;
    const byCmd = (out.sent[kindOf(args)] ??= {});
    byCmd[cmd] = (byCmd[cmd] ?? 0) + 1;
    out.sentTotal += 1;
  });
  return {
    async stop() {
      monitor.disconnect();
      return out;
    },
  };
}
