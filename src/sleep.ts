/**
 * The one abortable wait. Ends after `ms`, or early when `signal` aborts; either way its abort listener is
 * removed when it ends, so waits that come and go on a long-lived signal (a run's) never pile listeners up.
 * Resolves true when the whole wait passed, false when it was cut short (or the signal had already aborted).
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
