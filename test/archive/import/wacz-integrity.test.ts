/**
 * `memento-archive import` of a WACZ package checks what the package
 * vouches for before it imports anything: the hashes of datapackage.json,
 * its Ed25519 signature and its inclusion proofs. A package whose
 * data.warc.gz was changed (a record's body rewritten, its WARC digests
 * recomputed, the old datapackage.json, signature and proofs kept) is
 * refused in one line; with --accept-damaged it is imported and its
 * captures are marked, in their log entries and on the verify page. A
 * sound package from another archive imports, says what was checked (and
 * that the key is not this archive's), and its captures' entries name the
 * package's digest.
 */
import { createHash } from 'node:crypto';
import { createWriteStream, existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import t from 'tap';
import yauzl from 'yauzl';
import yazl from 'yazl';
import { captureRecord, putCapture, request, startArchive, TWO_ARCHIVES } from '../../helpers/archive.js';
import { runCli, writeConfig } from '../helpers.js';

const SITE = 'http://www.example.org';
const DATE = 'Mon, 05 Jan 2026 09:00:00 GMT';
const TS = '20260105090000';
const sha = (b: Buffer | string) => 'sha256:' + createHash('sha256').update(b).digest('hex');

/** Every entry of a ZIP, in order: name, bytes, whether it was deflated. */
async function unzip(file: string): Promise<[string, Buffer, boolean][]> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) => yauzl.open(file, { lazyEntries: true }, (err, z) => (err ? reject(err) : resolve(z))));
  const out: [string, Buffer, boolean][] = [];
  await new Promise<void>((resolve, reject) => {
    zip.on('error', reject);
    zip.on('end', resolve);
    zip.on('entry', (e: yauzl.Entry) =>
      zip.openReadStream(e, (err, s) => {
        if (err) return reject(err);
        const parts: Buffer[] = [];
        s.on('data', (c: Buffer) => parts.push(c));
        s.on('end', () => {
          out.push([e.fileName, Buffer.concat(parts), e.compressionMethod !== 0]);
          zip.readEntry();
        });
      }),
    );
    zip.readEntry();
  });
  zip.close();
  return out;
}

async function rezip(file: string, entries: [string, Buffer, boolean][]): Promise<void> {
  const zip = new yazl.ZipFile();
  for (const [name, bytes, compress] of entries) zip.addBuffer(bytes, name, { compress });
  zip.end();
  await pipeline(zip.outputStream, createWriteStream(file));
}

/**
 * `data` (a gzip-per-record WARC file) with the response record of
 * `/terms.html` rewritten: "30 days" → "90 days", its Content-Length and
 * WARC digests recomputed, gzipped again: a record that looks intact.
 */
function forgeWarc(data: Buffer): Buffer {
  const out: Buffer[] = [];
  let at = 0;
  while (at < data.length) {
    const inflate = zlib.inflateRawSync(data.subarray(at + 10), { info: true }) as unknown as { engine: { bytesWritten: number } };
    const end = at + 10 + inflate.engine.bytesWritten + 8;
    const member = data.subarray(at, end);
    let rec = zlib.gunzipSync(member);
    const text = rec.toString('latin1');
    if (/^WARC-Type: response\r$/m.test(text) && /^WARC-Target-URI: .*\/terms\.html\r$/m.test(text)) {
      const hEnd = rec.indexOf('\r\n\r\n');
      let head = rec.subarray(0, hEnd).toString('latin1');
      const block = Buffer.from(
        rec
          .subarray(hEnd + 4, rec.length - 4)
          .toString('latin1')
          .replace('30 days', '90 days'),
        'latin1',
      );
      const payload = block.subarray(block.indexOf('\r\n\r\n') + 4);
      head = head
        .replace(/^Content-Length: .*$/m, `Content-Length: ${block.length}`)
        .replace(/^WARC-Block-Digest: .*$/m, `WARC-Block-Digest: ${sha(block)}`)
        .replace(/^WARC-Payload-Digest: .*$/m, `WARC-Payload-Digest: ${sha(payload)}`);
      rec = Buffer.concat([Buffer.from(head + '\r\n\r\n', 'latin1'), block, Buffer.from('\r\n\r\n')]);
      out.push(zlib.gzipSync(rec));
    } else out.push(member);
    at = end;
  }
  return Buffer.concat(out);
}

t.test('a WACZ package with a changed record is refused; --accept-damaged imports and marks it; a sound one says what was checked', async (t) => {
  // The source archive and its package.
  const src = writeConfig();
  t.teardown(() => rmSync(src.dir, { recursive: true, force: true }));
  const a = await startArchive(TWO_ARCHIVES, { dataDir: src.dataDir });
  for (const [p, body] of [
    ['/terms.html', '<h1>Terms</h1><p>Returns within 30 days.</p>'],
    ['/index.html', '<h1>Shop</h1>'],
  ])
    t.equal((await putCapture(a, SITE + p, captureRecord({ target: p, date: DATE, body }))).status, 201);
  await a.close(true);
  const pkg = path.join(src.dir, 'shop.wacz');
  const w = await runCli(['wacz', '--config', src.config, '-o', pkg]);
  t.equal(w.code, 0, w.stderr);
  const entries = await unzip(pkg);
  const dpDigest = sha(entries.find(([n]) => n === 'datapackage.json')![1]);
  const forged = path.join(src.dir, 'forged.wacz');
  await rezip(
    forged,
    entries.map(([n, b, z]) => [n, n === 'archive/data.warc.gz' ? forgeWarc(b) : b, z]),
  );

  // Refused: one line, exit 2, nothing imported.
  const b = writeConfig();
  t.teardown(() => rmSync(b.dir, { recursive: true, force: true }));
  const refused = await runCli(['import', '--config', b.config, forged]);
  t.equal(refused.code, 2, refused.stdout + refused.stderr);
  t.match(
    refused.stderr,
    /^memento-archive: .*forged\.wacz: archive\/data\.warc\.gz does not match its hash in datapackage\.json \(sha256:[0-9a-f]{64} stated, sha256:[0-9a-f]{64} read\)( \(and \d+ more mismatch\(es\)\))?; nothing imported \(--accept-damaged/,
  );
  t.equal(refused.stderr.trim().split('\n').length, 1, 'one line');
  t.match(refused.stdout, /^wacz: .*forged\.wacz: package sha256:[0-9a-f]{64}: checked /m, 'what was checked is said');
  t.notOk(existsSync(path.join(b.dataDir, 'index.sqlite3')), 'no archive was opened: nothing imported');

  // --accept-damaged: imported, each mismatch named, the captures marked.
  const accepted = await runCli(['import', '--config', b.config, '--accept-damaged', forged]);
  t.equal(accepted.code, 0, accepted.stdout + accepted.stderr);
  t.match(accepted.stdout, /^damaged: .*forged\.wacz: archive\/data\.warc\.gz does not match its hash in datapackage\.json/m);
  t.match(
    accepted.stdout,
    /^damaged: .*forged\.wacz: .*record <urn:uuid:[^>]+> hashes to sha256:[0-9a-f]{64}; its proof \(line \d+\) says sha256:/m,
    'the proof of the changed record',
  );
  const bd = await startArchive(TWO_ARCHIVES, { dataDir: b.dataDir });
  t.teardown(() => bd.close(true));
  const proof = JSON.parse((await request(`${bd.url}/current/proof/${TS}/${SITE}/terms.html`)).text) as { leaf: { via: string } };
  t.equal(proof.leaf.via, `import wacz ${dpDigest} damaged`, 'the log entry says: imported from that package, damaged');
  const page = await request(`${bd.url}/web/verify/current/${TS}/${SITE}/terms.html`, { headers: { accept: 'text/html' } });
  t.match(page.text, /Imported from a damaged package\./);
  t.match(page.text, /did NOT pass the import’s integrity check/);

  // A sound package, from another archive: imported, what was checked said, the package named in each entry.
  const c = writeConfig();
  t.teardown(() => rmSync(c.dir, { recursive: true, force: true }));
  const ok = await runCli(['import', '--config', c.config, pkg]);
  t.equal(ok.code, 0, ok.stdout + ok.stderr);
  t.match(
    ok.stdout,
    new RegExp(
      `^wacz: .*shop\\.wacz: package ${dpDigest}: checked the SHA-256 of 5 file\\(s\\) listed in datapackage\\.json; the hash of datapackage\\.json in datapackage-digest\\.json; ` +
        `the Ed25519 signature of the package by the key with SHA-256 [0-9a-f]{64} \\(not this archive’s key\\); 2 inclusion proof\\(s\\) against the package’s signed tree head\\(s\\), key SHA-256 [0-9a-f]{64}$`,
      'm',
    ),
  );
  t.notMatch(ok.stdout, /^damaged:/m);
  const cd = await startArchive(TWO_ARCHIVES, { dataDir: c.dataDir });
  t.teardown(() => cd.close(true));
  const p2 = JSON.parse((await request(`${cd.url}/current/proof/${TS}/${SITE}/terms.html`)).text) as { leaf: { via: string } };
  t.equal(p2.leaf.via, `import wacz ${dpDigest}`);
  const page2 = await request(`${cd.url}/web/verify/current/${TS}/${SITE}/terms.html`, { headers: { accept: 'text/html' } });
  t.match(page2.text, new RegExp(`It was imported from a WACZ package whose datapackage.json has the SHA-256 ${dpDigest.slice(7)}, which passed`));
  t.match(page2.text, /class="verdict ok"/);
  t.ok(readFileSync(pkg).length > 0);
});
