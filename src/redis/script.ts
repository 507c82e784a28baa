/**
 * The one way our code runs Lua: a script run by SHA (EVALSHA), falling back to EVAL when the server does not
 * know it yet (a new or restarted Redis). One round trip in the steady state. Does not touch the client (no
 * `defineCommand`), so stores can share an injected connection. Lint keeps `eval`/`evalsha` in this room.
 *
 * Every script is a `.lua` file in the `lua/` folder of the room that owns it, named by its path from `src/`
 * (`new LuaScript('auth/lua/acquire')`); its `--@include` and `--@define` lines are resolved once, at its first
 * run (src/redis/lua-loader.ts), and the text and its SHA kept. No Lua lives in TypeScript.
 *
 * Every key a script touches comes in as KEYS, never built inside Lua from another key's name (Redis Cluster
 * routes a script by its KEYS; test/redis/declared-keys.test.ts watches every script with MONITOR).
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { readLuaFile } from './lua-files.js';
import { resolveLua, type LuaDefines } from './lua-loader.js';

export type LuaArg = string | number | Buffer;

/**
 * ioredis makes a `…Buffer` twin of every command (EVALSHA's is not in its types). Not `callBuffer('EVALSHA', …)`:
 * with auto-pipelining on, ioredis drops the command's name from a `callBuffer` and sends the SHA as the command.
 */
interface BufferScripting {
  evalshaBuffer(sha: string, numKeys: number, ...rest: LuaArg[]): Promise<unknown>;
  evalBuffer(source: string, numKeys: number, ...rest: LuaArg[]): Promise<unknown>;
}

export interface LuaScriptOptions {
  /** How many KEYS the script takes, checked on every run; leave out for a script that takes a list of keys. */
  numKeys?: number;
  /** Turns an error reply into a room's own error (state: STATE_CORRUPT); undefined leaves the error as it is. */
  mapError?: (err: Error) => Error | undefined;
  /** The constants the script's `--@define` lines name (src/redis/lua-loader.ts). */
  defines?: LuaDefines;
}

export class LuaScript {
  /** Every script made so far (module constants, made at import): test/redis/declared-keys.test.ts runs them all. */
  static readonly made = new Set<LuaScript>();
  #source: string | undefined;
  #sha: string | undefined;
  constructor(
    /** The script's file: its path from `src/` without `.lua` (`state/lua/pending-add`). */
    readonly name: string,
    private readonly options: LuaScriptOptions = {},
  ) {
    LuaScript.made.add(this);
  }

  /** The text Redis runs: the file with its includes and defines resolved (read once, at the first use). */
  get source(): string {
    return (this.#source ??= resolveLua(this.name, readLuaFile, this.options.defines));
  }

  get sha(): string {
    return (this.#sha ??= createHash('sha1').update(this.source).digest('hex'));
  }

  get defines(): LuaDefines {
    return this.options.defines ?? {};
  }

  async run(client: Redis, keys: readonly string[], args: readonly LuaArg[]): Promise<unknown> {
    return this.#run(client, keys, args, false);
  }

  /** The same, with the reply's strings as Buffers (values that are bytes, not text). */
  async runBuffer(client: Redis, keys: readonly string[], args: readonly LuaArg[]): Promise<unknown> {
    return this.#run(client, keys, args, true);
  }

  async #run(client: Redis, keys: readonly string[], args: readonly LuaArg[], buffers: boolean): Promise<unknown> {
    const { numKeys, mapError } = this.options;
    if (numKeys !== undefined && keys.length !== numKeys) throw new Error(`script expects ${numKeys} keys, got ${keys.length}`);
    try {
      try {
        return buffers ? await (client as unknown as BufferScripting).evalshaBuffer(this.sha, keys.length, ...keys, ...args) : await client.evalsha(this.sha, keys.length, ...keys, ...args);
      } catch (err) {
        if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
        return buffers ? await (client as unknown as BufferScripting).evalBuffer(this.source, keys.length, ...keys, ...args) : await client.eval(this.source, keys.length, ...keys, ...args);
      }
    } catch (err) {
      throw (err instanceof Error ? mapError?.(err) : undefined) ?? err;
    }
  }
}
