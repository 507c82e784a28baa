/**
 * Whether an Odoo connection's API key was refused, kept in Redis so that every process tells a change once: the
 * first process to see a refusal marks it and tells `needs_reconnect` (a `connection.changed` event); the first to
 * read again with a key that works clears it and tells `connected` (decision 0216). One key per server and database.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { connectionKey } from '../../redis/keys.js';

export interface KeyStateHooks {
  onRevoked?(r: { connection: string; at: number; reason: string }): void;
  onReadable?(r: { connection: string; at: number }): void;
}

/** The connection an Odoo tenant names: its server and database (a digest, no address in a key name). */
export function odooDatabase(url: string, database: string): string {
  return createHash('sha256').update(`${new URL(url).origin}\n${database}`).digest('hex').slice(0, 24);
}

export class OdooKeyState {
  readonly #key: string;
  #refused: boolean | undefined;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    private readonly connection: string,
    private readonly hooks: KeyStateHooks = {},
  ) {
    this.#key = connectionKey(prefix, connection, 'odoo', 'key-refused');
  }

  /** The key was refused: marked once (true when this call marked it). */
  async refused(reason: string, at = Date.now()): Promise<boolean> {
    this.#refused = true;
    const marked = (await this.redis.set(this.#key, JSON.stringify({ at, reason }), 'NX')) === 'OK';
    if (marked) this.hooks.onRevoked?.({ connection: this.connection, at, reason });
    return marked;
  }

  /** A read with the key worked: the mark cleared once (true when this call cleared it). One Redis call a process. */
  async accepted(at = Date.now()): Promise<boolean> {
    if (this.#refused === false) return false;
    this.#refused = false;
    const cleared = (await this.redis.del(this.#key)) === 1;
    if (cleared) this.hooks.onReadable?.({ connection: this.connection, at });
    return cleared;
  }
}
