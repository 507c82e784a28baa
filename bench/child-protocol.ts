/** Messages between the benchmark and its worker processes (IPC), checked on arrival. */
import { z } from 'zod';

export const parentCommandSchema = z.object({ cmd: z.enum(['stats', 'stop']) });
export type ParentCommand = z.infer<typeof parentCommandSchema>;

export const childStatsSchema = z.object({
  event: z.literal('stats'),
  pid: z.number(),
  cpuUserUs: z.number(),
  cpuSystemUs: z.number(),
  /** Peak resident set size of the process so far (kB). */
  maxRssKb: z.number(),
  rssBytes: z.number(),
  /** After a full collection: the live heap. */
  heapUsedBytes: z.number(),
  /** After the same collection: the heap V8 keeps (live and free), and memory outside it (Buffers, native). */
  heapTotalBytes: z.number().optional(),
  externalBytes: z.number().optional(),
  /** Schedulers this process wrote (upserted) since it started, from its 'schedulers in place' log lines (BENCH_COUNT_SCHEDULERS). */
  schedulerWrites: z.number().optional(),
});
export type ChildStats = z.infer<typeof childStatsSchema>;

export const childMessageSchema = z.discriminatedUnion('event', [
  /** `timings`: the process's uptime (ms) when its modules were loaded, its app made, its worker started (ready). */
  z.object({ event: z.literal('ready'), pid: z.number(), timings: z.object({ loadedMs: z.number(), appMs: z.number(), readyMs: z.number() }).optional() }),
  z.object({ event: z.literal('stopped'), pid: z.number() }),
  z.object({ event: z.literal('error'), pid: z.number(), message: z.string() }),
  childStatsSchema,
]);
export type ChildMessage = z.infer<typeof childMessageSchema>;
