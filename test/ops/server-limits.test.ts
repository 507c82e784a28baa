/**
 * Connection bounds of our HTTP servers (issue 28 item 5), over real sockets on 127.0.0.1: headers that never end
 * are cut at the headers timeout (set small here), and connections past the cap are refused while the ones
 * within it are served.
 */
import { connect, type Socket } from 'node:net';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { startOpsServer, type OpsServer } from '../../src/ops/server.js';

describe('the ops port holds connections to their bounds', () => {
  let ops: OpsServer | undefined;
  const sockets: Socket[] = [];
  afterEach(async () => {
    for (const s of sockets) s.destroy();
    await ops?.close();
  });
  const start = async (limits: { requestTimeoutMs: number; headersTimeoutMs: number; maxConnections: number }): Promise<number> => {
    ops = await startOpsServer({ port: 0, registry: new Registry(), readiness: async () => ({ ready: true, checks: {} }), limits });
    return ops.port;
  };
  /** Opens a socket, writes `text`, and resolves with what came back once the server closed it. */
  const closedAfter = (port: number, text: string): Promise<string> =>
    new Promise((resolve) => {
      const s = connect(port, '127.0.0.1', () => s.write(text));
      sockets.push(s);
      let got = '';
      s.on('data', (d: Buffer) => (got += d.toString()));
      s.on('error', () => undefined);
      s.on('close', () => resolve(got));
    });

  it('closes a connection whose headers do not arrive within the headers timeout', { timeout: 8_000 }, async () => {
    const port = await start({ requestTimeoutMs: 1_000, headersTimeoutMs: 300, maxConnections: 10 });
    const got = await closedAfter(port, 'GET /healthz HTTP/1.1\r\nhost: x\r\nx-slow: ');
    expect(got === '' || got.startsWith('HTTP/1.1 408')).toBe(true);
  });

  it('refuses connections past the cap and serves the ones within it', { timeout: 8_000 }, async () => {
    const port = await start({ requestTimeoutMs: 30_000, headersTimeoutMs: 30_000, maxConnections: 2 });
    const kept = (): Promise<Socket> =>
      new Promise((resolve) => {
        const s = connect(port, '127.0.0.1', () => s.write('GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n'));
        sockets.push(s);
        s.on('error', () => undefined);
        s.once('data', (d: Buffer) => {
          expect(d.toString()).toMatch(/^HTTP\/1\.1 200 /);
          resolve(s);
        });
      });
    await kept();
    await kept();
    expect(await closedAfter(port, 'GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n')).toBe('');
  });
});
