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

/** How long a note of the companies to choose from is kept without a run to renew it. */
const UNCHOSEN_TTL_S = 7 * 86_400;

export class OdooKeyState {
  readonly #key: string;
  readonly #unchosen: string;
  #refused: boolean | undefined;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    private readonly connection: string,
    private readonly hooks: KeyStateHooks = {},
  ) {
    this.#key = connectionKey(prefix, connection, 'odoo', 'key-refused');
    this.#unchosen = connectionKey(prefix, connection, 'odoo', 'companies');
  }

  /** The database holds several companies and the tenant names none: what a run said (for `connect status`). */
  async unchosen(message: string): Promise<void> {
    await this.redis.set(this.#unchosen, message, 'EX', UNCHOSEN_TTL_S);
  }

  /** A company was chosen (or is the only one). */
  async chosen(): Promise<void> {
    await this.redis.del(this.#unchosen);
  }

  /** What Redis knows of this connection: a refused key, companies to choose from, or nothing against it. */
  async read(): Promise<{ refused?: { at: number; reason: string }; unchosen?: string }> {
    const [refused, unchosen] = await Promise.all([this.redis.get(this.#key), this.redis.get(this.#unchosen)]);
    let parsed: { at: number; reason: string } | undefined;
    try {
      parsed = refused === null ? undefined : (JSON.parse(refused) as { at: number; reason: string });
    } catch {
      parsed = { at: 0, reason: 'refused' };
    }
    return { ...(parsed ? { refused: parsed } : {}), ...(unchosen !== null ? { unchosen } : {}) };
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
