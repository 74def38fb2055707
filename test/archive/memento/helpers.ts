/**
 * Fakes for the Memento answer's unit tests: a stored response record as
 * warc-reader.ts returns one, a reader handing out fresh ones, an index row.
 */
import zlib from 'node:zlib';
import type { ReplayTarget } from '../../../archive/replay/urls.js';
import type { MementoRow } from '../../../archive/store/index/index-db.js';
import type { StoredResponse } from '../../../archive/store/warcs/warc-reader.js';
import type { RawHeader } from '#shared/http-head.js';

export const BASE = 'http://arxiv.example.net';
export const URI_R = 'http://a.example.org/x?y=1';
export const TAG = `<base href="http://a.example.org/x?y=1">`;
export const DT = Date.parse('2001-03-20T20:35:00Z') / 1000;
export const PAGE = '<!DOCTYPE html><html><head><title>x</title></head><body>hello</body></html>';
export const WITH_BASE = `<!DOCTYPE html><html><head>${TAG}<title>x</title></head><body>hello</body></html>`;

export type Fake = StoredResponse & { closed: number };

/** A StoredResponse as warc-reader.ts returns it: the body whole in `bodyBuffer` (a small record), or streamed in chunks. */
export function stored(status: number, headers: RawHeader[], body: Buffer | string, opts: { streamed?: boolean } = {}): Fake {
  const buf = Buffer.from(body);
  const s: Fake = {
    statusLine: `HTTP/1.1 ${status} X`,
    status,
    reason: 'X',
    headers,
    body: (async function* () {
      for (let i = 0; i < buf.length; i += 1000) yield new Uint8Array(buf.subarray(i, i + 1000));
    })(),
    bodyBuffer: opts.streamed ? null : buf,
    bodyLength: buf.length,
    closed: 0,
    close: () => {
      s.closed++;
    },
  };
  return s;
}

/** A read function that hands out a fresh record each time, and remembers them. */
export function reader(make: () => Fake) {
  const reads: Fake[] = [];
  return {
    reads,
    read: async (_row: MementoRow) => {
      const s = make();
      reads.push(s);
      return s;
    },
  };
}

export function row(mime: string, status = 200): MementoRow {
  return {
    id: 7,
    archive_id: '2001',
    urlkey: 'org,example,a)/x?y=1',
    uri_r: URI_R,
    datetime: DT,
    status,
    mime,
    digest: 'sha256:00',
    warc_file: '2001/x.warc.gz',
    warc_offset: 0,
    warc_length: 0,
    client_ip: null,
    refers_to: null,
  };
}

export async function bytes(body: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const c of body) out.push(Buffer.from(c));
  return Buffer.concat(out);
}

/** Where the replay form of the fake memento points. */
export const TARGET: ReplayTarget = { base: BASE, archiveId: '2001', ts: '20010320203500' };

/**
 * A gzip compression bomb: `prefix`, then zero bytes up to `size` decoded
 * bytes in all (rounded up to whole MiB of zeros), gzip-encoded as one
 * member for the prefix and one repeated member of zeros (RFC 1952 §2.2: a
 * gzip file is a series of members; they decode one after the other).
 * 1 GiB decoded is about 1 MB.
 */
export function gzipBomb(prefix: string, size: number): Buffer {
  const mib = Math.ceil(Math.max(0, size - prefix.length) / (1024 * 1024));
  const member = (ZEROS ??= zlib.gzipSync(Buffer.alloc(1024 * 1024), { level: 9 }));
  return Buffer.concat([zlib.gzipSync(prefix), ...Array<Buffer>(mib).fill(member)]);
}
let ZEROS: Buffer | undefined;
