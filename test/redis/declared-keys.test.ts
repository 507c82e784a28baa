/**
 * Every Lua script receives every key it touches as KEYS (a script that builds a key name inside Lua breaks on
 * Redis Cluster, which routes a script by its KEYS). Watched with MONITOR: each command a script runs shows as
 * `lua` right after the EVAL/EVALSHA that ran it, and Redis's own COMMAND GETKEYS names that command's keys.
 * Every script made by our code (LuaScript.made) is run here, so a new one cannot slip past. And every `.lua` file
 * (scripts and includes, resolved by src/redis/lua-loader.ts) compiles on Redis (SCRIPT LOAD), every script file
 * is made by exactly one LuaScript, and no TypeScript of src/ or jobs/ holds Lua.
 */
import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLuaFile } from '../../src/redis/lua-files.js';
import { resolveLua } from '../../src/redis/lua-loader.js';
import { LuaScript } from '../../src/redis/script.js';
import { runEveryScript } from '../helpers/every-script.js';
import { testPrefix, useTestRedis } from '../helpers/redis.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** Files under `dir` of the repository whose name ends with `ext`, as paths from `dir`. */
async function filesOf(dir: string, ext: string): Promise<string[]> {
  return (await readdir(`${REPO}${dir}`, { recursive: true })).filter((f) => f.endsWith(ext)).sort();
}

/** A script's file, to find it by. */
function name(script: LuaScript | undefined): string | undefined {
  return script === undefined ? undefined : `src/${script.name}.lua`;
}

interface Seen {
  args: string[];
  source: string;
}

describe('Lua scripts and their keys', () => {
  const server = useTestRedis();
  let redis: Redis;
  let monitor: Redis;
  const seen: Seen[] = [];
  const markers = new Map<string, () => void>();

  beforeAll(async () => {
    redis = new Redis(server.url);
    monitor = await new Redis(server.url).monitor();
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (args[0]?.toLowerCase() === 'echo' && args[1] !== undefined && markers.has(args[1])) markers.get(args[1])?.();
      else seen.push({ args, source });
    });
  });
  afterAll(async () => {
    monitor?.disconnect();
    redis?.disconnect();
  });

  /** Waits until MONITOR has shown everything sent so far. */
  const flush = async (): Promise<void> => {
    const marker = `declared-keys-${randomBytes(6).toString('hex')}`;
    const arrived = new Promise<void>((resolve) => markers.set(marker, resolve));
    await redis.echo(marker);
    await arrived;
  };

  /**
   * The keys of one command, by Redis's own key spec. A command without keys (TIME, PUBLISH) is refused by
   * GETKEYS: it ran in the script, so its arguments were right, and it has no key to declare.
   */
  const keysOf = async (args: string[]): Promise<string[]> => {
    try {
      return (await redis.call('COMMAND', 'GETKEYS', ...args)) as string[];
    } catch (err) {
      if (/no key arguments|wrong number of arguments/i.test((err as Error).message)) return [];
      throw err;
    }
  };

  it('every key a script touches is one of its KEYS, for every script our code makes', async () => {
    const p = testPrefix('declared');
    await runEveryScript(redis, p);
    await flush();

    const bySha = new Map([...LuaScript.made].map((s) => [s.sha, s]));
    const ran = new Set<string>();
    const undeclared: string[] = [];
    let current: { sha: string; keys: Set<string> } | undefined;
    const lastSha = new Map<string, string>();
    for (const { args, source } of seen) {
      const cmd = (args[0] ?? '').toLowerCase();
      if (source !== 'lua') {
        if (cmd !== 'eval' && cmd !== 'evalsha') continue;
        // MONITOR shows a script's source escaped; an EVAL of ours is the fallback of the EVALSHA just before it.
        if (cmd === 'evalsha') lastSha.set(source, args[1] ?? '');
        const sha = cmd === 'eval' ? (lastSha.get(source) ?? 'a raw EVAL') : (args[1] ?? '');
        current = { sha, keys: new Set(args.slice(3, 3 + Number(args[2]))) };
        continue;
      }
      if (!current) throw new Error(`a command ran in Lua before any script: ${args.join(' ')}`);
      ran.add(current.sha);
      for (const k of await keysOf(args)) {
        if (current.keys.has(k)) continue;
        undeclared.push(`${args[0]} ${k} (script: ${name(bySha.get(current.sha)) ?? current.sha})`);
      }
    }

    expect(undeclared).toEqual([]);
    const never = [...LuaScript.made].filter((s) => !ran.has(s.sha)).map(name);
    expect(never, 'scripts this test never ran: run them in runEveryScript').toEqual([]);
  });

  it('every .lua file resolves and compiles on Redis (SCRIPT LOAD), as the SHA its LuaScript runs by', async () => {
    // Every room's scripts are made: test/helpers/every-script.ts imports them all.
    const byName = new Map([...LuaScript.made].map((s) => [s.name, s]));
    // An include is compiled on its own too (a script that includes it may not exist yet), with every define declared.
    const defines = Object.assign({}, ...[...LuaScript.made].map((s) => s.defines)) as Record<string, number>;
    const names = (await filesOf('src', '.lua')).map((f) => f.slice(0, -'.lua'.length));
    expect(names.length).toBeGreaterThan(40);
    const failed: string[] = [];
    for (const name of names) {
      const script = byName.get(name);
      const text = script?.source ?? resolveLua(name, readLuaFile, defines);
      try {
        const sha = await redis.script('LOAD', text);
        if (script && sha !== script.sha) failed.push(`src/${name}.lua: Redis's SHA ${String(sha)} is not ${script.sha}`);
      } catch (err) {
        failed.push(`src/${name}.lua: ${(err as Error).message}`);
      }
    }
    expect(failed).toEqual([]);
    // A script is a file outside includes/, made by one LuaScript; a LuaScript names a file.
    const scripts = names.filter((n) => !n.split('/').includes('includes'));
    expect([...byName.keys()].sort()).toEqual(scripts);
    expect(byName.size).toBe(LuaScript.made.size);
  });

  it('no TypeScript of src/ or jobs/ holds Lua: every script is a .lua file', async () => {
    const lua = /\bredis\.p?call\s*\(|\bKEYS\[\d|\bARGV\[\d/;
    const holding: string[] = [];
    for (const dir of ['src', 'jobs']) {
      for (const f of await filesOf(dir, '.ts')) {
        if (lua.test(await readFile(`${REPO}${dir}/${f}`, 'utf8'))) holding.push(`${dir}/${f}`);
      }
    }
    expect(holding).toEqual([]);
  });
});

