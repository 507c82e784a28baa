/**
 * One system call for the commands of one tick. ioredis writes each command to its socket as it is issued: a sync
 * run sends ~75 commands, and at thousands of runs a minute the worker spent about a fifth of its CPU in those
 * writes (issue 40's profile: `writeUtf8String` and `writeBuffer` under `sendCommand`). Corking the socket at a
 * tick's first write and uncorking it on the next tick sends everything issued meanwhile in one `writev`, in the
 * order issued; replies come back as before. Unlike ioredis' auto-pipelining it holds no command behind another's
 * reply (that option keeps one pipeline in flight at a time, and made the same bench a third slower), and it leaves
 * the commands themselves alone.
 */
import type { Socket } from 'node:net';
import type { Cluster, Redis } from 'ioredis';

const COALESCED = Symbol('collections-sync.coalesced');

type Writer = (...args: unknown[]) => boolean;

function coalesceWrites(socket: Socket & { [COALESCED]?: true }): void {
  if (socket[COALESCED]) return;
  socket[COALESCED] = true;
  const write = (socket as { write: Writer }).write;
  let corked = false;
  const flush = (): void => {
    corked = false;
    socket.uncork();
  };
  (socket as { write: Writer }).write = function (this: Socket, ...args: unknown[]): boolean {
    if (!corked) {
      corked = true;
      socket.cork();
      process.nextTick(flush);
    }
    return write.apply(this, args);
  };
}

/** Coalesces the writes of `redis` on every connection it makes (a reconnect makes a new socket). */
export function coalesceCommands(redis: Redis): void {
  redis.on('connect', () => {
    const stream = (redis as { stream?: unknown }).stream;
    if (stream && typeof (stream as Socket).cork === 'function') coalesceWrites(stream as Socket);
  });
}

/** The same for every node a Cluster client opens. */
export function coalesceClusterCommands(cluster: Cluster): void {
  cluster.on('+node', (node: Redis) => coalesceCommands(node));
}
