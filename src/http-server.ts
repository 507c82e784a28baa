/**
 * Listening and closing, the same for every HTTP server of ours (ops, dashboard, webhooks; the test doubles close
 * theirs with `closeServer`): listen on a port (0 = any) and host, reject when the port cannot be had, and close
 * without waiting for kept-alive connections to idle out.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Listening {
  port: number;
  close(): Promise<void>;
}

export async function listen(server: Server, port: number, host: string): Promise<Listening> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return { port: (server.address() as AddressInfo).port, close: () => closeServer(server) };
}

/** Stops accepting, drops open connections (idle keep-alive ones included) and resolves once closed. */
export function closeServer(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}
