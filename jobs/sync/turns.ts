/**
 * A page's records started a few per turn of the event loop (issue 14). Starting all of a page's records at once
 * ran every decision of the page (mapping, hashing, the request schema's check) in one turn: ~10 ms for 200
 * invoices, during which the answers of the requests in flight waited, and each of those requests held its slot
 * of the pool longer. Between two groups the loop reads the answers that came in.
 */

/** Records started per turn of the event loop. */
export const RECORDS_PER_TURN = 16;

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * `task` for every item, `perTurn` started per turn of the event loop; resolves with every result, or rejects
 * with the first failure (as Promise.all) once every task has started.
 */
export async function inTurns<T, R>(items: readonly T[], task: (item: T) => Promise<R>, perTurn = RECORDS_PER_TURN): Promise<R[]> {
  const started: Promise<R>[] = [];
  for (let i = 0; i < items.length; i += 1) {
    if (i > 0 && i % perTurn === 0) await nextTurn();
    const p = task(items[i]!);
    // Awaited below with the others; a failure before then is not an unhandled rejection.
    p.catch(() => undefined);
    started.push(p);
  }
  return Promise.all(started);
}

/** `fn` of every item, `perTurn` per turn of the event loop (for synchronous work over a page). */
export async function mapInTurns<T, R>(items: readonly T[], fn: (item: T) => R, perTurn = RECORDS_PER_TURN): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += 1) {
    if (i > 0 && i % perTurn === 0) await nextTurn();
    out.push(fn(items[i]!));
  }
  return out;
}
