/**
 * What the benchmark's Redis did between two moments: commands by name (INFO commandstats) and its CPU time (INFO
 * cpu), summed over every master of a cluster.
 */
import type { Redis } from 'ioredis';
import { nodesOf } from '../src/redis/connection.js';

export interface RedisSnapshot {
  calls: Map<string, number>;
  cpuMs: number;
}

export async function redisSnapshot(redis: Redis): Promise<RedisSnapshot> {
  const calls = new Map<string, number>();
  let cpuMs = 0;
  for (const node of nodesOf(redis)) {
    const [stats, cpu] = await Promise.all([node.info('commandstats'), node.info('cpu')]);
    for (const line of stats.split(/\r?\n/)) {
      const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
      if (m?.[1] !== undefined && m[2] !== undefined) calls.set(m[1], (calls.get(m[1]) ?? 0) + Number(m[2]));
    }
    for (const line of cpu.split(/\r?\n/)) {
      const m = /^used_cpu_(sys|user):([\d.]+)/.exec(line);
      if (m?.[2] !== undefined) cpuMs += Number(m[2]) * 1000;
    }
  }
  return { calls, cpuMs };
}

export interface RedisDelta {
  total: number;
  /** Commands by name, largest first. */
  byCommand: Record<string, number>;
  cpuMs: number;
}

/** Commands between two snapshots (the INFO calls themselves are left out). */
export function redisDelta(a: RedisSnapshot, b: RedisSnapshot): RedisDelta {
  const rows: [string, number][] = [];
  for (const [name, n] of b.calls) {
    if (name === 'info') continue;
    const d = n - (a.calls.get(name) ?? 0);
    if (d > 0) rows.push([name, d]);
  }
  rows.sort((x, y) => y[1] - x[1]);
  return { total: rows.reduce((s, [, n]) => s + n, 0), byCommand: Object.fromEntries(rows), cpuMs: b.cpuMs - a.cpuMs };
}
