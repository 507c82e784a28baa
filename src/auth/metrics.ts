import type { AuthRejectReason } from '../collections/token-provider.js';

/** What a rotation was for (also the `reason` of a refresh job). */
export const ROTATION_REASONS = ['scheduled', 'missing', '401', 'manual'] as const;
export type RotationReason = (typeof ROTATION_REASONS)[number];

/** Hooks for metrics (prom-client later). All synchronous, never throwing. */
export interface AuthMetrics {
  /** A new token was stored. */
  rotation(clientKey: string, reason: RotationReason): void;
  /** The service answered 401 to a request with one of our tokens. */
  unauthorized(reason: AuthRejectReason): void;
  /** An `acquire()` waited (gate closed, no token yet, or at the in-flight limit) for this long. */
  gateWaitMs(ms: number): void;
}

export const noopAuthMetrics: AuthMetrics = {
  rotation: () => undefined,
  unauthorized: () => undefined,
  gateWaitMs: () => undefined,
};
