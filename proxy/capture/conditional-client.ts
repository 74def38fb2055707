/**
 * The connections that carry conditional PUTs to the archives, and the
 * HTTP/1.1 exchange of one such PUT (RFC 9112): a head with
 * `Transfer-Encoding: chunked` and `Expect: 100-continue`, the body as one
 * chunk after `100 Continue` (or after a wait without any answer, RFC 9110
 * §10.1.1), and the final answer read by its framing (Content-Length,
 * chunked, or to the close). After a final answer that came before the
 * body (a 412), the request is ended with its empty last chunk, so that
 * the connection can carry the next PUT.
 *
 * Why not node:http: a conditional PUT of an unchanged page is a head and a
 * 412, one per captured request; Node's client spends about 3× the CPU of
 * this exchange on its general machinery (measured: docs/benchmarks.md).
 * The streamed PUTs and the spool's re-sends, long and rare, stay on
 * node:http (proxy/archive-put.ts).
 *
 * Connections are kept per archive (`host:port`), at most
 * `archive_connections` of them; a PUT that finds them all busy waits for
 * one. An idle connection is closed after 4 s, or a second before the
 * archive's announced keep-alive timeout (`Keep-Alive: timeout=5`). A PUT
 * that fails on a reused connection before its final answer (the archive
 * closed it as it was taken) is sent once more on a new one: at worst the
 * archive gets the capture twice, and its dedup answers the second.
 */
import net from 'node:net';
import { formatHostPort } from '#shared/net.js';
import type { PutTarget } from '../archive-put.js';

/** One conditional PUT. */
export interface ConditionalRequest {
  target: PutTarget;
  /** Header fields after `Host` (`Transfer-Encoding`, `Expect` and the framing are added). */
  headers: [string, string][];
  /** The capture record: heads, then body chunks; sent as one chunk. */
  body: Buffer[];
  /** The archive may stay silent this long, and a free connection may take this long to come, ms. */
  timeoutMs: number;
  /** How long to wait for `100 Continue` or an answer before sending the body anyway, ms. */
  continueWaitMs: number;
}

/** A POST of questions (proxy/capture/questions.ts): sent whole with its head (no `Expect`), its answer read whole. */
export interface QuestionsRequest {
  target: PutTarget;
  /** Header fields after `Host` (`Content-Type: text/plain` and `Content-Length` are added). */
  headers: [string, string][];
  body: Buffer;
  /** The archive may stay silent this long, and a free connection may take this long to come, ms. */
  timeoutMs: number;
  /** Most bytes of the answer's body kept in `text`. */
  maxAnswerBytes: number;
}

/**
 * The head of a request to the archive: request line, `Host`, `headers`,
 * then `framing` (its own header lines, each ending in CRLF) and the blank
 * line (RFC 9112 §2.1).
 *
 * @throws TypeError when the target or a header value cannot be sent as is (a space, CR or LF in it)
 */
function requestHead(method: 'PUT' | 'POST', target: PutTarget, headers: [string, string][], framing: string): Buffer {
  if (!TARGET.test(target.path)) throw new TypeError(`${method} target has characters that cannot be sent: ${JSON.stringify(target.path.slice(0, 80))}`);
  for (const [k, v] of headers) if (!FIELD_VALUE.test(v)) throw new TypeError(`header ${k} has characters that cannot be sent`);
  return Buffer.from(
    `${method} ${target.path} HTTP/1.1\r\nHost: ${formatHostPort(target.host, target.port)}\r\n` +
      headers.map(([k, v]) => `${k}: ${v}\r\n`).join('') +
      framing +
      '\r\n',
    'latin1',
  );
}

/** The archive's final answer (`bodySent`: whether the record went), or why there is none. */
export type ConditionalAnswer = { status: number; firstLine: string; bodySent: boolean; text?: string } | { error: string };

/** A conditional PUT in flight: its answer (never rejects), and a way to cut it. */
export interface ConditionalPut {
  answer: Promise<ConditionalAnswer>;
  /** Cuts the PUT (its connection is closed); the answer becomes `{ error }`. */
  cancel(reason: string): void;
}

const IDLE_MS = 4000;
/** Request targets Node's own client accepts (RFC 9112 §3.2; latin1 bytes as Node sends them). */
const TARGET = /^[\u0021-\u00ff]+$/;
const FIELD_VALUE = /^[\t\u0020-\u007e\u0080-\u00ff]*$/;

/** One kept connection. */
interface Conn {
  socket: net.Socket;
  pool: Pool;
  /** Used for an exchange before (a reused connection may have been closed by the archive meanwhile). */
  used: boolean;
  /** The exchange it carries, when busy. */
  exchange: Exchange | undefined;
  idleMs: number;
  /** Out of its pool's count already. */
  dropped: boolean;
}

/** The connections to one archive. */
interface Pool {
  host: string;
  port: number;
  idle: Conn[];
  /** Connections open or opening. */
  count: number;
  waiting: ((conn: Conn | undefined) => void)[];
}

/** See the module comment. One per proxy. */
export class ArchiveConnections {
  private readonly pools = new Map<string, Pool>();
  private closed = false;

  /** @param maxPerArchive most connections to each archive (`archive_connections`) */
  constructor(private readonly maxPerArchive = 64) {}

  /**
   * Sends one conditional PUT (see the module comment).
   * @throws TypeError when the target or a header value cannot be sent as is (a space, CR or LF in it)
   */
  put(req: ConditionalRequest): ConditionalPut {
    const head = requestHead('PUT', req.target, req.headers, 'Transfer-Encoding: chunked\r\nExpect: 100-continue\r\n');
    return this.send(
      req.target,
      req.timeoutMs,
      (conn) => new Exchange(conn, head, req, { body: req.body, continueWaitMs: req.continueWaitMs, keepBytes: 1024 }),
    );
  }

  /**
   * Sends one POST of questions (proxy/capture/questions.ts): head and
   * body in one write, `Content-Length` framing; the answer's body is kept
   * whole (up to `maxAnswerBytes`) in `text`. A failure on a reused
   * connection before any answer is retried once on a new one (the POST
   * changes nothing on the archive).
   *
   * @throws TypeError when the target or a header value cannot be sent as is
   */
  post(req: QuestionsRequest): ConditionalPut {
    const head = requestHead('POST', req.target, req.headers, `Content-Type: text/plain; charset=UTF-8\r\nContent-Length: ${req.body.length}\r\n`);
    return this.send(req.target, req.timeoutMs, (conn) => new Exchange(conn, head, req, { body: [req.body], keepBytes: req.maxAnswerBytes, withText: true }));
  }

  /** One request on a connection of `target`'s archive, once more on a new connection when a reused one failed before any answer. */
  private send(target: PutTarget, timeoutMs: number, start: (conn: Conn) => Exchange): ConditionalPut {
    let cancelled: string | undefined;
    let current: Exchange | undefined;
    const answer = (async (): Promise<ConditionalAnswer> => {
      for (let attempt = 0; ; attempt++) {
        const conn = await this.acquire(target, timeoutMs, attempt > 0);
        if (cancelled !== undefined) {
          if (conn) this.release(conn, true);
          return { error: cancelled };
        }
        if (!conn) return { error: `no connection to the archive came free within ${timeoutMs} ms (archive_connections)` };
        current = start(conn);
        const result = await current.done;
        current = undefined;
        this.release(conn, result.reusable);
        // A reused connection the archive had closed: once more, on a new one.
        if ('error' in result.answer && result.retryable && attempt === 0 && cancelled === undefined) continue;
        return cancelled !== undefined ? { error: cancelled } : result.answer;
      }
    })();
    return {
      answer,
      cancel: (reason) => {
        cancelled ??= reason;
        current?.fail(reason, false);
      },
    };
  }

  /** Closes every connection; PUTs in flight fail. */
  destroy(): void {
    this.closed = true;
    for (const pool of this.pools.values()) {
      for (const c of pool.idle) c.socket.destroy();
      pool.idle = [];
      for (const w of pool.waiting.splice(0)) w(undefined);
    }
  }

  /** A connection to `target`'s archive: an idle one (unless `fresh`), a new one, or one that comes free; `undefined` after `timeoutMs`. */
  private acquire(target: PutTarget, timeoutMs: number, fresh: boolean): Promise<Conn | undefined> {
    if (this.closed) return Promise.resolve(undefined);
    const key = formatHostPort(target.host, target.port);
    let pool = this.pools.get(key);
    if (!pool) this.pools.set(key, (pool = { host: target.host, port: target.port, idle: [], count: 0, waiting: [] }));
    while (!fresh && pool.idle.length) {
      const conn = pool.idle.pop()!;
      if (!conn.socket.destroyed && conn.socket.writable) return Promise.resolve(conn);
      this.drop(conn);
    }
    if (pool.count < this.maxPerArchive || fresh) return Promise.resolve(this.connect(pool));
    const p = pool;
    return new Promise((resolve) => {
      const waiter = (conn: Conn | undefined) => {
        clearTimeout(timer);
        resolve(conn);
      };
      const timer = setTimeout(() => {
        p.waiting.splice(p.waiting.indexOf(waiter), 1);
        resolve(undefined);
      }, timeoutMs);
      p.waiting.push(waiter);
    });
  }

  /** Opens a new connection of `pool` (its errors are the first exchange's). */
  private connect(pool: Pool): Conn {
    pool.count++;
    const socket = net.connect(pool.port, pool.host);
    socket.setNoDelay(true);
    const conn: Conn = { socket, pool, used: false, exchange: undefined, idleMs: IDLE_MS, dropped: false };
    socket.on('data', (d: Buffer) => (conn.exchange ? conn.exchange.onData(d) : socket.destroy()));
    socket.on('error', (err: NodeJS.ErrnoException) => conn.exchange?.fail(`PUT to the archive failed: ${err.code ?? ''} ${err.message}`.trim(), true));
    socket.on('timeout', () => (conn.exchange ? conn.exchange.fail(`the archive sent nothing for ${socket.timeout} ms`, false) : socket.destroy()));
    socket.on('close', () => {
      conn.exchange?.fail('the archive closed the connection before its answer', true);
      this.drop(conn);
    });
    return conn;
  }

  /** Puts a connection back (or closes it), and hands it, or a new one, to a PUT waiting. */
  private release(conn: Conn, reusable: boolean): void {
    conn.exchange = undefined;
    conn.used = true;
    const pool = conn.pool;
    if (!reusable || this.closed || conn.socket.destroyed) {
      conn.socket.destroy();
      this.drop(conn);
      return;
    }
    const next = pool.waiting.shift();
    if (next) return next(conn);
    if (conn.idleMs <= 0) {
      // The archive keeps idle connections a second or less: not worth keeping.
      conn.socket.destroy();
      this.drop(conn);
      return;
    }
    conn.socket.setTimeout(conn.idleMs);
    pool.idle.push(conn);
  }

  /** A connection is gone: out of its pool's count (once), and a PUT waiting gets a new one. */
  private drop(conn: Conn): void {
    const pool = conn.pool;
    const i = pool.idle.indexOf(conn);
    if (i >= 0) pool.idle.splice(i, 1);
    if (conn.dropped) return;
    conn.dropped = true;
    pool.count--;
    const next = pool.waiting.shift();
    if (next) next(this.closed ? undefined : this.connect(pool));
  }
}

/** How an exchange ended: the answer, whether its connection can carry the next PUT, whether a failure may be retried. */
interface ExchangeResult {
  answer: ConditionalAnswer;
  reusable: boolean;
  retryable: boolean;
}

/** How an {@link Exchange} sends its body and keeps its answer. */
interface ExchangeOptions {
  /** The request's body: with `continueWaitMs`, sent as one chunk after `100 Continue`; without, written with the head as it is (Content-Length framing). */
  body: Buffer[];
  continueWaitMs?: number;
  /** Most bytes of the final answer's body kept as text (its first line is the answer's `firstLine`). */
  keepBytes: number;
  /** Give the kept text as the answer's `text`. */
  withText?: boolean;
}

/** One request on one connection: writes the head, reads the answers, sends the body when asked. */
class Exchange {
  readonly done: Promise<ExchangeResult>;
  private resolve!: (r: ExchangeResult) => void;
  private finished = false;
  private buf: Buffer = Buffer.alloc(0);
  private bodySent = false;
  private continueTimer: NodeJS.Timeout | undefined;
  // The final answer, once its head is read.
  private status = 0;
  private framing: 'length' | 'chunked' | 'close' | 'none' = 'none';
  private left = 0;
  private chunkState: 'size' | 'data' | 'crlf' | 'trailer' = 'size';
  /** The final answer's body, as far as it is kept. */
  private textParts: Buffer[] = [];
  private kept = 0;
  private reusable = true;

  constructor(
    private readonly conn: Conn,
    head: Buffer,
    req: { timeoutMs: number },
    private readonly opts: ExchangeOptions,
  ) {
    this.done = new Promise((resolve) => (this.resolve = resolve));
    conn.exchange = this;
    conn.socket.setTimeout(req.timeoutMs);
    if (opts.continueWaitMs === undefined) {
      // No Expect: head and body in one write.
      this.bodySent = true;
      conn.socket.write(opts.body.length === 1 ? Buffer.concat([head, opts.body[0]]) : Buffer.concat([head, ...opts.body]));
    } else {
      conn.socket.write(head);
      this.continueTimer = setTimeout(() => this.sendBody(), opts.continueWaitMs);
    }
  }

  /** Sends the record as one chunk and the last chunk (RFC 9112 §7.1). */
  private sendBody(): void {
    clearTimeout(this.continueTimer);
    if (this.bodySent || this.finished) return;
    this.bodySent = true;
    const s = this.conn.socket;
    const n = this.opts.body.reduce((a, c) => a + c.length, 0);
    s.cork();
    s.write(`${n.toString(16)}\r\n`);
    for (const c of this.opts.body) s.write(c);
    s.write('\r\n0\r\n\r\n');
    s.uncork();
  }

  /** Bytes of the archive's answers. */
  onData(d: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
    try {
      this.parse();
    } catch (err) {
      this.fail(`the archive's answer is not HTTP/1.1: ${(err as Error).message}`, false);
    }
  }

  private parse(): void {
    while (!this.finished) {
      if (this.status === 0) {
        const end = this.buf.indexOf('\r\n\r\n');
        if (end < 0) {
          if (this.buf.length > 64 * 1024) throw new Error('an answer head over 64 KiB');
          return;
        }
        const lines = this.buf.subarray(0, end).toString('latin1').split('\r\n');
        this.buf = this.buf.subarray(end + 4);
        this.onHead(lines);
        continue;
      }
      if (!this.readBody()) return;
      this.complete();
    }
  }

  /** A response head: an interim one (100 Continue: send the body) or the final one (its framing). */
  private onHead(lines: string[]): void {
    const m = /^HTTP\/1\.([01]) (\d{3})(?: |$)/.exec(lines[0]);
    if (!m) throw new Error(`status line ${JSON.stringify(lines[0].slice(0, 80))}`);
    const status = Number(m[2]);
    if (status < 200) {
      if (status === 100) this.sendBody();
      return;
    }
    clearTimeout(this.continueTimer);
    this.status = status;
    if (m[1] === '0') this.reusable = false;
    let length: number | undefined;
    let chunked = false;
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (name === 'content-length') length = Number(value);
      else if (name === 'transfer-encoding') chunked = /(?:^|,)\s*chunked\s*$/i.test(value);
      else if (name === 'connection' && /(?:^|,)\s*close\s*(?:,|$)/i.test(value)) this.reusable = false;
      else if (name === 'keep-alive') {
        const hint = /timeout=(\d+)/i.exec(value);
        if (hint) this.conn.idleMs = Math.max(0, Math.min(IDLE_MS, Number(hint[1]) * 1000 - 1000));
      }
    }
    if (status === 204 || status === 304) this.framing = 'none';
    else if (chunked) this.framing = 'chunked';
    else if (length !== undefined && Number.isInteger(length) && length >= 0) {
      this.framing = 'length';
      this.left = length;
    } else {
      this.framing = 'close';
      this.reusable = false;
    }
    if (!this.bodySent) {
      // An answer before the body was asked for. A 412: end the request with its empty last chunk,
      // so that both sides agree where it ends; anything else: the connection is not used again.
      if (status === 412) {
        this.bodySent = true;
        this.conn.socket.write('0\r\n\r\n');
      } else this.reusable = false;
    }
  }

  /** Reads the final answer's body from the buffer (its first KiB kept as text); true once it is whole. */
  private readBody(): boolean {
    const max = this.opts.keepBytes;
    const keep = (b: Buffer) => {
      if (this.kept < max) {
        const part = b.subarray(0, max - this.kept);
        this.kept += part.length;
        this.textParts.push(Buffer.from(part));
      }
    };
    switch (this.framing) {
      case 'none':
        return true;
      case 'close':
        keep(this.buf);
        this.buf = Buffer.alloc(0);
        return false; // whole at the close
      case 'length': {
        const take = Math.min(this.left, this.buf.length);
        keep(this.buf.subarray(0, take));
        this.buf = this.buf.subarray(take);
        this.left -= take;
        return this.left === 0;
      }
      case 'chunked':
        return this.readChunks(keep);
    }
  }

  private readChunks(keep: (b: Buffer) => void): boolean {
    for (;;) {
      if (this.chunkState === 'data') {
        const take = Math.min(this.left, this.buf.length);
        keep(this.buf.subarray(0, take));
        this.buf = this.buf.subarray(take);
        this.left -= take;
        if (this.left > 0) return false;
        this.chunkState = 'crlf';
      }
      const eol = this.buf.indexOf('\r\n');
      if (eol < 0) return false;
      const line = this.buf.subarray(0, eol).toString('latin1');
      this.buf = this.buf.subarray(eol + 2);
      if (this.chunkState === 'crlf') {
        if (line !== '') throw new Error('a chunk not followed by CRLF');
        this.chunkState = 'size';
      } else if (this.chunkState === 'size') {
        const size = parseInt(line.split(';')[0].trim(), 16);
        if (!Number.isFinite(size) || size < 0) throw new Error(`chunk size ${JSON.stringify(line.slice(0, 20))}`);
        if (size === 0) this.chunkState = 'trailer';
        else {
          this.left = size;
          this.chunkState = 'data';
        }
      } else if (line === '') return true; // the end of the trailer section
    }
  }

  private complete(): void {
    if (this.buf.length) this.reusable = false; // bytes after the answer: not ours to read
    const text = Buffer.concat(this.textParts).toString('utf8');
    this.end({
      answer: { status: this.status, firstLine: text.split('\n')[0].slice(0, 300), bodySent: this.bodySent, ...(this.opts.withText ? { text } : {}) },
      reusable: this.reusable && this.bodySent,
      retryable: false,
    });
  }

  /** The exchange failed (or the connection closed): a close-delimited answer is whole then. */
  fail(reason: string, closing: boolean): void {
    if (this.finished) return;
    if (closing && this.status && this.framing === 'close') return this.complete();
    this.end({ answer: { error: reason }, reusable: false, retryable: this.conn.used && this.status === 0 });
  }

  private end(r: ExchangeResult): void {
    if (this.finished) return;
    this.finished = true;
    clearTimeout(this.continueTimer);
    if (!r.reusable) this.conn.socket.destroy();
    this.resolve(r);
  }
}
