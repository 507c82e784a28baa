/**
 * A mapper result: what one mapper makes of one canonical record. Every mapper returns a member of this one
 * union (each narrows it to the kinds it can give):
 * - `push`: the request body to send, with the optional fields left out of it (or cut to fit) because the
 *   service would refuse them as they are (`dropped`; empty when nothing was left out or cut);
 * - `skip`: not pushed, by a rule (a draft invoice);
 * - `reject`: cannot be built (the record is dead-lettered with `reason`).
 */
import type { DroppedField } from './fields.js';

export interface MapperPush<Body> {
  kind: 'push';
  body: Body;
  dropped: DroppedField[];
}

export interface MapperSkip<Reason extends string> {
  kind: 'skip';
  reason: Reason;
}

export interface MapperReject {
  kind: 'reject';
  reason: string;
}

export type MapperResult<Body, SkipReason extends string = string> = MapperPush<Body> | MapperSkip<SkipReason> | MapperReject;
