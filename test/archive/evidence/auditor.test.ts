/**
 * What an auditor does with the archive's log (docs/evidence.md), through
 * a real daemon over HTTP, with a checker that shares no code with the
 * archive (test/helpers/rfc9162.ts, written from RFC 9162): capture a few
 * dozen mementos (several URLs, revisits among them, in two archives),
 * check each archive's signed tree head from its `public_key` alone; for
 * every memento fetch its inclusion proof and its WARC records, rebuild
 * its leaf from the record bytes (URI-R, Memento-Datetime, WARC-Record-ID,
 * SHA-256 of the block, its Archive-Capture-Via, and for a revisit its
 * WARC-Refers-To and WARC-Payload-Digest) and check it against the signed
 * root, and check that a revisit's leaf names the record (and the payload
 * digest) of the capture whose body the archive replays for it; capture
 * more, wait for the newer head, and check the consistency proof between
 * the two. Any byte that differs fails it.
 */
import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import { Readable } from 'node:stream';
import t, { type Test } from 'tap';
import { WARCParser } from 'warcio';
import { captureRecord, putCapture, request } from '../../helpers/archive.js';
import { startDaemon } from '../../helpers/daemons.js';
import { proofProves, type Sth, verifyConsistency, verifySth } from '../../helpers/rfc9162.js';
import { writeConfig } from '../helpers.js';

const URLS = ['/', '/about', '/news?id=7', '/style.css', '/logo.png', '/a/b/c.html'].map((p) => `http://www.example.org${p}`);
const DAY = 86_400_000;
/** 29 Dec 2025 … 3 Jan 2026: both archives of the config ("2025" until 2026, "current" after). */
const FIRST_DAY = Date.UTC(2025, 11, 29);

/** The capture of `uri` served on day `d` after FIRST_DAY: its body changes every second day, so the day between is a revisit. */
function served(uri: string, d: number): Buffer {
  const u = new URL(uri);
  return captureRecord({
    target: u.pathname + u.search,
    date: new Date(FIRST_DAY + d * DAY).toUTCString(),
    body: `${uri}, version ${Math.floor(d / 2)}`,
    responseHeaders: [['Content-Type', 'text/plain']],
  });
}

interface Memento {
  archive: string;
  ts: string;
  uri: string;
}

/** GET `url` as JSON. @throws when the status is not 200 */
async function json<T>(url: string): Promise<T> {
  const r = await request(url);
  if (r.status !== 200) throw new Error(`${url}: ${r.status} ${r.text}`);
  return JSON.parse(r.text) as T;
}

/** Polls `check` (no fixed sleep: the next try as soon as the last answer is in, at most 20 per second) until it gives a value, for at most 30 s. */
async function until<T>(what: string, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** PUTs the captures of `days` of every URL; the mementos made (201, by their Location). */
async function capture(t: Test, base: string, days: number[]): Promise<Memento[]> {
  const out: Memento[] = [];
  for (const d of days) {
    for (const uri of URLS) {
      const r = await putCapture({ url: base }, uri, served(uri, d));
      if (r.status !== 201) {
        t.equal(r.status, 200, 'not a new memento: a duplicate');
        continue;
      }
      const m = new RegExp(`^${base}/([^/]+)/memento/(\\d{14})/(.*)$`).exec(String(r.headers.location));
      t.ok(m, `Location of ${uri} on day ${d} is a URI-M`);
      out.push({ archive: m![1], ts: m![2], uri: m![3] });
    }
  }
  return out;
}

interface RebuiltLeaf {
  leaf: string;
  uri: string;
  datetime: string;
  recordId: string;
  digest: string;
  type: string;
  via: string;
  refersTo?: string;
  payloadDigest?: string;
  /** A response record's payload (the HTTP body after its head), SHA-256. */
  body?: string;
}

/**
 * The leaf of a memento rebuilt from its `/record` bytes (RFC 9162 leaf input as docs/evidence.md gives it), read with
 * warcio: the four lines, then `via <Archive-Capture-Via>`, and for a revisit `refers-to <WARC-Refers-To>` and
 * `payload-digest <WARC-Payload-Digest>`.
 */
async function leafFromRecord(body: Buffer): Promise<RebuiltLeaf> {
  for await (const rec of new WARCParser(Readable.from([body]), { parseHttp: false })) {
    const type = rec.warcType ?? '';
    const block = Buffer.from(await rec.readFully(false));
    if (type !== 'response' && type !== 'revisit') continue;
    const uri = rec.warcTargetURI ?? '';
    const datetime = new Date(rec.warcDate ?? '').toISOString().replace(/[-:T]/g, '').slice(0, 14);
    const recordId = rec.warcHeader('WARC-Record-ID') ?? '';
    const digest = 'sha256:' + createHash('sha256').update(block).digest('hex');
    const via = rec.warcHeader('Archive-Capture-Via') ?? '';
    let leaf = `${uri}\n${datetime}\n${recordId}\n${digest}\nvia ${via}`;
    const out: RebuiltLeaf = { leaf, uri, datetime, recordId, digest, type, via };
    if (type === 'revisit') {
      out.refersTo = rec.warcHeader('WARC-Refers-To') ?? '';
      out.payloadDigest = rec.warcHeader('WARC-Payload-Digest') ?? '';
      leaf += `\nrefers-to ${out.refersTo}\npayload-digest ${out.payloadDigest}`;
    } else
      out.body =
        'sha256:' +
        createHash('sha256')
          .update(block.subarray(block.indexOf('\r\n\r\n') + 4))
          .digest('hex');
    return { ...out, leaf };
  }
  throw new Error('no response or revisit record in the answer');
}

interface Proof {
  leaf: { uri: string; datetime: string; record_id: string; digest: string; via?: string; refers_to?: string; payload_digest?: string };
  leaf_index: number;
  tree_size: number;
  audit_path: string[];
  sth: Sth;
}

t.test('an auditor checks every memento against the signed log, and the log’s growth, from the public key alone', async (t) => {
  const { dir, config } = writeConfig();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const d = await startDaemon('memento-archive.js', ['serve', '--config', config, '--quiet']);
  t.teardown(() => d.stop());

  const mementos = await capture(t, d.url, [0, 1, 2, 3, 4, 5]);
  t.ok(mementos.length >= 30, `${mementos.length} mementos`);
  const byArchive = new Map<string, Memento[]>();
  for (const m of mementos) byArchive.set(m.archive, [...(byArchive.get(m.archive) ?? []), m]);
  t.same([...byArchive.keys()].sort(), ['2025', 'current'], 'in both archives');

  const heads = new Map<string, Sth>();
  let revisits = 0;
  /** Every response record read, by its record id: what a revisit's leaf must name. */
  const responses = new Map<string, { body: string; uri: string; datetime: string }>();
  const revisitLeaves: { m: Memento; mine: RebuiltLeaf }[] = [];
  for (const [archive, list] of byArchive) {
    // The head that holds every capture so far (signed within seconds of them).
    const sth = await until(`the head of ${archive} with ${list.length} entries`, async () => {
      const h = await json<Sth>(`${d.url}/${archive}/log`);
      return h.tree_size >= list.length ? h : undefined;
    });
    t.equal(sth.tree_size, list.length, `${archive}: one entry per memento`);
    t.ok(verifySth(sth), `${archive}: the head's signature, checked with its public_key`);
    heads.set(archive, sth);
    const key = sth.public_key;
    const indexes = new Set<number>();
    for (const m of list) {
      const proof = await json<Proof>(`${d.url}/${archive}/proof/${m.ts}/${m.uri}`);
      const rec = await request(`${d.url}/${archive}/record/${m.ts}/${m.uri}`);
      t.equal(rec.status, 200);
      const mine = await leafFromRecord(rec.body);
      if (mine.type === 'revisit') {
        revisits++;
        revisitLeaves.push({ m, mine });
      } else responses.set(mine.recordId, { body: mine.body!, uri: mine.uri, datetime: mine.datetime });
      // The leaf as rebuilt from the record bytes: every field, then its hash.
      const revisitFields = mine.type === 'revisit' ? { refers_to: mine.refersTo, payload_digest: mine.payloadDigest } : {};
      t.same(
        proof.leaf,
        { uri: mine.uri, datetime: mine.datetime, record_id: mine.recordId, digest: mine.digest, via: 'put', ...revisitFields },
        `${m.uri} ${m.ts}: the leaf`,
      );
      t.equal(mine.uri, m.uri);
      t.equal(mine.datetime, m.ts);
      t.equal(proof.tree_size, proof.sth.tree_size);
      t.ok(verifySth(proof.sth, key), 'the proof’s head is signed by the same key');
      if (proof.sth.tree_size === sth.tree_size) t.equal(proof.sth.root_hash, sth.root_hash, 'the same root as /log');
      t.ok(proofProves(mine.leaf, proof), `${m.uri} ${m.ts}: leaf ${proof.leaf_index} is in the signed tree of ${proof.tree_size}`);
      indexes.add(proof.leaf_index);
      // One byte changed in the record's leaf fails the check (so the check can fail).
      const changed = mine.leaf.replace(/.$/, (c) => (c === '0' ? '1' : '0'));
      t.notOk(proofProves(changed, proof), 'a changed digest is not in the tree');
    }
    t.same(
      [...indexes].sort((a, b) => a - b),
      list.map((_, i) => i),
      `${archive}: the mementos are the leaves 0 … ${list.length - 1}`,
    );
  }
  t.ok(revisits >= 6, `${revisits} revisits among them`);
  // A revisit's leaf names the capture whose body is replayed for it: that capture's record id, and its body's digest,
  // which is the SHA-256 of the body the archive serves for the revisit.
  for (const { m, mine } of revisitLeaves) {
    const original = responses.get(mine.refersTo!);
    t.ok(original, `${m.uri} ${m.ts}: the revisit's leaf names a response record of the archive`);
    t.equal(original?.body, mine.payloadDigest, `${m.uri} ${m.ts}: whose body has the payload digest the leaf names`);
    const served = await request(`${d.url}/${m.archive}/memento/${m.ts}id_/${m.uri}`);
    t.equal(
      'sha256:' + createHash('sha256').update(served.body).digest('hex'),
      mine.payloadDigest,
      `${m.uri} ${m.ts}: the body served for the revisit is that one`,
    );
  }

  // More captures: the head grows, and the newer one holds the older one.
  const more = await capture(t, d.url, [6, 7, 8]);
  t.ok(more.length > 0 && more.every((m) => m.archive === 'current'));
  const old = heads.get('current')!;
  const size = old.tree_size + more.length;
  const newer = await until(`a head of current with ${size} entries`, async () => {
    const h = await json<Sth>(`${d.url}/current/log`);
    return h.tree_size >= size ? h : undefined;
  });
  t.equal(newer.tree_size, size);
  t.ok(verifySth(newer, old.public_key), 'the newer head, signed by the same key');
  t.same(await json<Sth>(`${d.url}/current/log?tree_size=${old.tree_size}`), old, 'the older head is kept');
  const c = await json<{ first: number; second: number; proof: string[] }>(`${d.url}/current/log/consistency?first=${old.tree_size}&second=${newer.tree_size}`);
  t.equal(c.first, old.tree_size);
  t.equal(c.second, newer.tree_size);
  const proof = c.proof.map((p) => Buffer.from(p, 'base64'));
  const [oldRoot, newRoot] = [Buffer.from(old.root_hash, 'base64'), Buffer.from(newer.root_hash, 'base64')];
  t.ok(verifyConsistency(old.tree_size, newer.tree_size, oldRoot, newRoot, proof), 'the newer tree extends the older one (RFC 9162 §2.1.4.2)');
  const flipped = proof.map((p) => Buffer.from(p));
  flipped[0][0] ^= 1;
  t.notOk(verifyConsistency(old.tree_size, newer.tree_size, oldRoot, newRoot, flipped), 'a changed byte of the proof fails it');
  // The new mementos are in the newer tree.
  for (const m of more) {
    const p = await json<Proof>(`${d.url}/current/proof/${m.ts}/${m.uri}`);
    const mine = await leafFromRecord((await request(`${d.url}/current/record/${m.ts}/${m.uri}`)).body);
    t.ok(p.leaf_index >= old.tree_size, 'appended after the older head');
    t.ok(proofProves(mine.leaf, p), `${m.uri} ${m.ts}`);
  }
});
