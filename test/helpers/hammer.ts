/**
 * What the token-chain child processes share (test/platforms/xero/child.ts, test/platforms/quickbooks/oauth-child.ts):
 * their common config, JSON lines on stdout, and the hammer: after `go` on stdin, `loops` loops call `step` until
 * `durationMs` is over, counting successes and errors (by PlatformError code).
 */
import { z } from 'zod';
import { PlatformError } from '../../src/platforms/types.js';

export const hammerConfigSchema = z.object({
  mode: z.enum(['hammer', 'crash']),
  redisUrl: z.string(),
  prefix: z.string(),
  tokenKey: z.string(),
  durationMs: z.number().default(3000),
  loops: z.number().int().default(2),
  /** The refresh lock's TTL (a killed holder blocks refreshes this long) and the token call's timeout. */
  lockTtlMs: z.number().optional(),
  tokenTimeoutMs: z.number().optional(),
});

export interface HammerSummary {
  event: 'summary';
  ok: number;
  errors: Record<string, number>;
}

export const emit = (line: object): void => void process.stdout.write(`${JSON.stringify(line)}\n`);

/** The token chain's settings a child takes from its config. */
export function authOverrides(cfg: { lockTtlMs?: number | undefined; tokenTimeoutMs?: number | undefined }): { lockTtlMs?: number; requestTimeoutMs?: number } {
  return {
    ...(cfg.lockTtlMs !== undefined ? { lockTtlMs: cfg.lockTtlMs } : {}),
    ...(cfg.tokenTimeoutMs !== undefined ? { requestTimeoutMs: cfg.tokenTimeoutMs } : {}),
  };
}

/** In `crash` mode the child SIGKILLs itself as soon as the token endpoint has answered, before the save. */
export function crashHooks(cfg: { mode: 'hammer' | 'crash' }): { afterTokenResponse: () => void } {
  return {
    afterTokenResponse: () => {
      if (cfg.mode !== 'crash') return;
      emit({ event: 'token-answered' });
      process.kill(process.pid, 'SIGKILL');
    },
  };
}

/** Says `ready`, waits for `go`, hammers, and returns the summary (which the child then emits). */
export async function hammer(cfg: { loops: number; durationMs: number }, step: () => Promise<void>): Promise<HammerSummary> {
  emit({ event: 'ready' });
  await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
  const summary: HammerSummary = { event: 'summary', ok: 0, errors: {} };
  const until = Date.now() + cfg.durationMs;
  await Promise.all(
    Array.from({ length: cfg.loops }, async () => {
      while (Date.now() < until) {
        try {
          await step();
          summary.ok += 1;
        } catch (err) {
          const code = err instanceof PlatformError ? err.code : err instanceof Error ? err.message : 'other';
          summary.errors[code] = (summary.errors[code] ?? 0) + 1;
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    }),
  );
  return summary;
}
