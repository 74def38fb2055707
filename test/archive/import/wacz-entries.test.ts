/**
 * `memento-archive import` of a WACZ package whose ZIP central directory
 * names the same bytes more than once: one stored WARC entry under
 * hundreds of names, one entry listed twice under its own name, an entry
 * whose bytes lie inside another's. Each is refused whole with one line
 * naming the package, before any WARC byte is read (nothing imported, no
 * archive opened); a hand-made package whose entries lie side by side
 * imports. ZIPs are written byte by byte here (PKWARE APPNOTE 6.3.10
 * §4.3.7 local file header, §4.3.12 central directory header, §4.3.16
 * end of central directory), since no ZIP library writes such files.
 */
import { createHash } from 'node:crypto';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import t from 'tap';
import { exchange, httpResponse, warcFile } from '../../helpers/warc.js';
import { runCli, writeConfig } from '../helpers.js';

/** One STORE entry's local header and data (§4.3.7), at `offset` in the file. */
interface Local {
  name: string;
  data: Buffer;
  offset: number;
}

function localEntry(name: string, data: Buffer): Buffer {
  const h = Buffer.alloc(30);
  h.writeUInt32LE(0x04034b50, 0);
  h.writeUInt16LE(20, 4); // version needed
  h.writeUInt16LE(0x0800, 6); // UTF-8 names
  h.writeUInt16LE(0, 8); // STORE
  h.writeUInt32LE(zlib.crc32(data), 14);
  h.writeUInt32LE(data.length, 18);
  h.writeUInt32LE(data.length, 22);
  h.writeUInt16LE(Buffer.byteLength(name), 26);
  return Buffer.concat([h, Buffer.from(name), data]);
}

/** The central directory header (§4.3.12) of an entry named `name` whose local header is `l`. */
function centralEntry(name: string, l: Local): Buffer {
  const h = Buffer.alloc(46);
  h.writeUInt32LE(0x02014b50, 0);
  h.writeUInt16LE(20, 4);
  h.writeUInt16LE(20, 6);
  h.writeUInt16LE(0x0800, 8);
  h.writeUInt16LE(0, 10);
  h.writeUInt32LE(zlib.crc32(l.data), 16);
  h.writeUInt32LE(l.data.length, 20);
  h.writeUInt32LE(l.data.length, 24);
  h.writeUInt16LE(Buffer.byteLength(name), 28);
  h.writeUInt32LE(l.offset, 42);
  return Buffer.concat([h, Buffer.from(name)]);
}

/**
 * A ZIP file: the local entries `locals` (name, data) one after another,
 * then a central directory naming `names` — each `[name, index of the
 * local entry it points at]` (default: each local entry once, by its own
 * name) — and the end record (§4.3.16).
 */
function zipFile(locals: [string, Buffer][], names?: [string, number][]): Buffer {
  const parts: Buffer[] = [];
  const placed: Local[] = [];
  let at = 0;
  for (const [name, data] of locals) {
    const b = localEntry(name, data);
    placed.push({ name, data, offset: at });
    parts.push(b);
    at += b.length;
  }
  const central = Buffer.concat((names ?? placed.map((l, i) => [l.name, i] as [string, number])).map(([n, i]) => centralEntry(n, placed[i])));
  const count = central.length && (names ?? placed).length;
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(count, 8);
  end.writeUInt16LE(count, 10);
  end.writeUInt32LE(central.length, 12);
  end.writeUInt32LE(at, 16);
  return Buffer.concat([...parts, central, end]);
}

const warc = (uri: string, body: string) =>
  warcFile(exchange(uri, '2026-02-01T00:00:00Z', httpResponse('200 OK', [['Content-Type', 'text/plain']], body)).records, true);

t.test('a package whose entries name the same bytes twice: refused whole, one line, nothing read or imported', async (t) => {
  const c = writeConfig();
  t.teardown(() => rmSync(c.dir, { recursive: true, force: true }));
  const one = warc('http://example.org/x', 'x'.repeat(100_000));
  const manifest = Buffer.from('{}');
  // Entry B (a whole local entry) is the data of entry A: A's bytes hold B's.
  const inner = localEntry('archive/inner.warc.gz', one);
  const cases: [string, Buffer, RegExp][] = [
    [
      'one WARC entry under 500 names',
      zipFile(
        [
          ['archive/data.warc.gz', one],
          ['datapackage.json', manifest],
        ],
        [...Array.from({ length: 500 }, (_, i): [string, number] => [`archive/d${String(i).padStart(4, '0')}.warc.gz`, 0]), ['datapackage.json', 1]],
      ),
      /: entries "archive\/d0000\.warc\.gz" and "archive\/d0001\.warc\.gz" are the same bytes \(from byte 0\); a ZIP holds each file once/,
    ],
    [
      'one entry listed twice',
      zipFile(
        [['archive/data.warc.gz', one]],
        [
          ['archive/data.warc.gz', 0],
          ['archive/data.warc.gz', 0],
        ],
      ),
      /: entries "archive\/data\.warc\.gz" and "archive\/data\.warc\.gz" are the same bytes/,
    ],
    [
      'an entry inside another',
      (() => {
        const z = zipFile([['archive/outer.warc.gz', inner]]);
        // A second central directory header for the entry inside the first one's data (30 + name bytes in).
        const innerAt = 30 + 'archive/outer.warc.gz'.length;
        const cdAt = z.readUInt32LE(z.length - 6);
        const extra = centralEntry('archive/inner.warc.gz', { name: 'archive/inner.warc.gz', data: one, offset: innerAt });
        const end = Buffer.from(z.subarray(z.length - 22));
        end.writeUInt16LE(2, 8);
        end.writeUInt16LE(2, 10);
        end.writeUInt32LE(z.length - 22 - cdAt + extra.length, 12);
        return Buffer.concat([z.subarray(0, z.length - 22), extra, end]);
      })(),
      /: entries "archive\/outer\.warc\.gz" and "archive\/inner\.warc\.gz" overlap \(at byte 51\); a ZIP holds each file once/,
    ],
  ];
  for (const [what, bytes, msg] of cases) {
    const file = path.join(c.dir, `${what.replace(/\W/g, '-')}.wacz`);
    writeFileSync(file, bytes);
    const started = process.hrtime.bigint();
    const r = await runCli(['import', '--config', c.config, file]);
    t.equal(r.code, 2, `${what}: exit 2`);
    t.match(r.stderr, msg, `${what}: ${r.stderr.trim()}`);
    t.ok(r.stderr.startsWith(`memento-archive: import: ${file}: `) || r.stderr.includes(file), 'the line names the package');
    t.match(r.stderr, /nothing imported\n$/);
    t.equal(r.stderr.trim().split('\n').length, 1, 'one line');
    t.equal(r.stdout, '', 'nothing read');
    t.comment(`${what}: ${Number(process.hrtime.bigint() - started) / 1e6} ms`);
  }
  t.notOk(existsSync(path.join(c.dataDir, 'index.sqlite3')), 'no archive was even opened');
});

t.test('a hand-made package whose entries lie side by side imports', async (t) => {
  const c = writeConfig();
  t.teardown(() => rmSync(c.dir, { recursive: true, force: true }));
  const file = path.join(c.dir, 'ok.wacz');
  const warcs: [string, Buffer][] = [
    ['archive/a.warc.gz', warc('http://example.org/a', 'a')],
    ['archive/b.warc.gz', warc('http://example.org/b', 'b')],
  ];
  // A manifest that lists both files with their hashes (import checks a package's integrity before its entries).
  const resources = warcs.map(([p, data]) => ({
    name: path.basename(p),
    path: p,
    hash: 'sha256:' + createHash('sha256').update(data).digest('hex'),
    bytes: data.length,
  }));
  const manifest = Buffer.from(JSON.stringify({ profile: 'data-package', wacz_version: '1.1.1', resources }));
  writeFileSync(file, zipFile([...warcs, ['datapackage.json', manifest]]));
  const r = await runCli(['import', '--config', c.config, file]);
  t.equal(r.code, 0, r.stdout + r.stderr);
  t.match(r.stdout, /: 2 new mementos,/);
});
