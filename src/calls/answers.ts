/** What the service answered to a call request, as far as we keep it: the call uuid of each number called. */
import { z } from 'zod';

const bulkAnswer = z.looseObject({ calls: z.array(z.looseObject({ uuid: z.string(), numberToCall: z.string() })) });
const singleAnswer = z.looseObject({ uuid: z.string() });

/** Number -> call uuid, from a bulk answer's `calls` or a single answer's `uuid` (for `numbers[0]`). */
export function callUuids(result: { body: unknown }, numbers: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  const bulk = bulkAnswer.safeParse(result.body);
  if (bulk.success) for (const c of bulk.data.calls) out.set(c.numberToCall, c.uuid);
  const single = singleAnswer.safeParse(result.body);
  if (single.success && numbers[0] !== undefined) out.set(numbers[0], single.data.uuid);
  return out;
}
