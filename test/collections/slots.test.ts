/**
 * A call given request slots (src/collections/slots.ts) holds one for each attempt's send only: it gives it back
 * before waiting out a back-off and takes another after it, saying how each attempt went (issue 28).
 */
import { describe, expect, it } from 'vitest';
import type { RequestSlots, SlotOutcome } from '../../src/collections/slots.js';
import { useFixture, type Fixture } from './fixture.js';

let f!: Fixture;
useFixture((x) => (f = x));

/** Slots that record what the client does with them: every take and give, and how many are held at each. */
function recordingSlots(): RequestSlots & { log: string[]; held: number } {
  let tickets = 0;
  const slots = {
    log: [] as string[],
    held: 0,
    take: (_signal: AbortSignal | undefined, again: boolean): Promise<number> => {
      slots.log.push(`take${again ? ' again' : ''} (held ${slots.held})`);
      slots.held += 1;
      tickets += 1;
      return Promise.resolve(tickets);
    },
    give: (ticket: number, outcome: SlotOutcome): void => {
      slots.held -= 1;
      slots.log.push(`give ${ticket} ${outcome.kind}${outcome.kind === 'overloaded' ? ` ${outcome.status} ${String(outcome.retryAfterMs)}` : ''}`);
    },
  };
  return slots;
}

describe('request slots', () => {
  it('are held for each send and given back before a back-off, with how the attempt went', async () => {
    f.sim.setFaults({
      script: [
        { route: 'GET /contact', fault: '503', count: 1 },
        { route: 'GET /contact', fault: '500', count: 1 },
        { route: 'GET /contact', fault: '429', count: 1, retryAfterS: 0 },
      ],
    });
    const slots = recordingSlots();
    await f.client.listContacts({ size: 1 }, { slots });
    expect(slots.log).toEqual([
      'take (held 0)',
      'give 1 overloaded 503 undefined',
      'take again (held 0)',
      'give 2 failed',
      'take again (held 0)',
      'give 3 overloaded 429 0',
      'take again (held 0)',
      'give 4 answered',
    ]);
    expect(slots.held).toBe(0);
  });

  it('are given back when the attempt fails without an answer (a reset), and after a refused request', async () => {
    f.sim.setFaults({ script: [{ route: 'GET /contact', fault: 'reset', count: 1 }] });
    const slots = recordingSlots();
    await f.client.listContacts({ size: 1 }, { slots });
    await expect(f.client.updatePayment('00000000-0000-4000-8000-000000000000', {}, { slots })).rejects.toThrow(/not found/);
    expect(slots.log).toEqual(['take (held 0)', 'give 1 failed', 'take again (held 0)', 'give 2 answered', 'take (held 0)', 'give 3 answered']);
  });
});
