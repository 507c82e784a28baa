import { inspect } from 'node:util';
import { z } from 'zod';

/**
 * A secret value (client secret, token, refresh token). It prints as `[redacted]` in every form
 * (String(), JSON, util.inspect, pino), so a config or error that holds one can be logged safely.
 * Only `reveal()` gives the value, at the single place that sends it.
 */
export class Secret {
  readonly #value: string;
  constructor(value: string) {
    this.#value = value;
  }
  reveal(): string {
    return this.#value;
  }
  equals(other: Secret): boolean {
    return this.#value === other.#value;
  }
  toString(): string {
    return '[redacted]';
  }
  toJSON(): string {
    return '[redacted]';
  }
  [inspect.custom](): string {
    return '[redacted]';
  }
}

/** A secret field of a configuration file: a non-empty string, kept as a Secret. */
export const secretField = z.string().min(1, 'must not be empty').transform((v) => new Secret(v));
