/**
 * A raw TCP client for tests that need exact bytes on the wire (a request
 * a client library would not send, a body sent in pieces): what it
 * received so far, waiting for a pattern, and its close.
 */
import { once } from 'node:events';
import net from 'node:net';
import type { Test } from 'tap';

/** A raw client connection: what it received so far, and its close. */
export interface RawConnection {
  socket: net.Socket;
  /** Everything received so far, as latin1 text. */
  received(): string;
  /** Resolves once the connection is closed. */
  closed: Promise<void>;
  /** Resolves once the received text matches `re`. */
  until(re: RegExp): Promise<void>;
  /** Forgets what was received so far: `received` and `until` then see only what comes next. */
  clear(): void;
}

/**
 * Opens a TCP connection to `port` on 127.0.0.1 and sends `bytes` exactly (a request with whatever the test needs in
 * it); from `localAddress` when given (another address of 127.0.0.0/8).
 */
export async function rawConnection(t: Test, port: number, bytes: string | Buffer, localAddress?: string): Promise<RawConnection> {
  const socket = net.connect({ port, host: '127.0.0.1', localAddress });
  socket.on('error', () => {});
  t.teardown(() => void socket.destroy());
  let text = '';
  const waiters: [RegExp, () => void][] = [];
  socket.on('data', (d: Buffer) => {
    text += d.toString('latin1');
    for (const w of [...waiters]) {
      if (w[0].test(text)) {
        waiters.splice(waiters.indexOf(w), 1);
        w[1]();
      }
    }
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await once(socket, 'connect');
  socket.write(bytes);
  return {
    socket,
    received: () => text,
    closed,
    until: (re) => (re.test(text) ? Promise.resolve() : new Promise<void>((resolve) => waiters.push([re, resolve]))),
    clear: () => void (text = ''),
  };
}
