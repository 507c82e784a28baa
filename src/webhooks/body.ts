/**
 * Reading a webhook's body from the socket, bounded in size and time: at most `maxBytes` (a Content-Length over it
 * is not read at all), and only until `deadlineAt` (the request's start plus SERVER_REQUEST_TIMEOUT_MS). Whatever
 * happens, the caller gets an outcome: the bytes, too large, too slow, or aborted by the client. The rest of an
 * unread body is never waited for (http-server.ts ends the connection once the answer is out).
 */
import type { IncomingMessage } from 'node:http';

export type BodyRead = { kind: 'ok'; raw: Buffer } | { kind: 'too_large' } | { kind: 'timeout' } | { kind: 'aborted' };

export function readBody(incoming: IncomingMessage, maxBytes: number, deadlineAt: number): Promise<BodyRead> {
  const declared = Number(incoming.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) return Promise.resolve({ kind: 'too_large' });
  if (incoming.readableEnded) return Promise.resolve({ kind: 'ok', raw: Buffer.alloc(0) });
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (r: BodyRead): void => {
      clearTimeout(timer);
      incoming.off('data', onData);
      incoming.off('end', onEnd);
      incoming.off('error', onAborted);
      incoming.off('close', onClose);
      if (r.kind !== 'ok') incoming.pause();
      resolve(r);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBytes) return finish({ kind: 'too_large' });
      chunks.push(chunk);
    };
    const onEnd = (): void => finish({ kind: 'ok', raw: Buffer.concat(chunks) });
    const onAborted = (): void => finish({ kind: 'aborted' });
    const onClose = (): void => {
      if (!incoming.complete) finish({ kind: 'aborted' });
    };
    const timer = setTimeout(() => finish({ kind: 'timeout' }), Math.max(0, deadlineAt - Date.now()));
    incoming.on('data', onData);
    incoming.once('end', onEnd);
    incoming.once('error', onAborted);
    incoming.once('close', onClose);
  });
}
